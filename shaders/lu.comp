#version 430
// LU factorisation with partial pivoting of each square matrix a [n, n] of a batch, as LAPACK's
// getrf (jax.scipy.linalg.lu_factor): the pivot of column j is the first row of largest |value|
// at or below j; rows are swapped whole; lu holds U on and above the diagonal and L's
// multipliers below it; piv[j] the row swapped with row j (0-based).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) buffer LU { float lu[]; };
layout(std430, binding = 2) writeonly buffer Piv { int piv[]; };
uniform int n;
uniform uint count;

void main() {
    uint bi = linear_index();
    if (bi >= count) return;
    int base = int(bi) * n * n;
    for (int i = 0; i < n * n; ++i) lu[base + i] = a[base + i];
    for (int j = 0; j < n; ++j) {
        int p = j;
        float best = abs(lu[base + j * n + j]);
        for (int r = j + 1; r < n; ++r) {
            float v = abs(lu[base + r * n + j]);
            if (v > best) { best = v; p = r; }
        }
        piv[int(bi) * n + j] = p;
        if (p != j) {
            for (int c = 0; c < n; ++c) {
                float t = lu[base + j * n + c];
                lu[base + j * n + c] = lu[base + p * n + c];
                lu[base + p * n + c] = t;
            }
        }
        float d = lu[base + j * n + j];
        if (d == 0.0) continue;
        for (int r = j + 1; r < n; ++r) {
            float f = lu[base + r * n + j] / d;
            lu[base + r * n + j] = f;
            for (int c = j + 1; c < n; ++c) lu[base + r * n + c] -= f * lu[base + j * n + c];
        }
    }
}
