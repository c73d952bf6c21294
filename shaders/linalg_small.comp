#version 430
// Small dense linear algebra, one invocation per matrix of a batch (keras.ops.linalg).
// CHOLESKY: y = L (or its transpose, upper != 0) of (a + a^T) / 2, as jnp.linalg.cholesky.
// Otherwise Gauss-Jordan elimination with partial pivoting of [A | B] in the scratch buffer s
// (B the identity with IDENTITY): want 0 writes A^-1 B ([count, n, m]); want 1 writes, per
// matrix, (det, sign, log|det|). tri 1 / 2 reads only A's lower / upper triangle.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) buffer S { float s[]; };
layout(std430, binding = 3) buffer Y { float y[]; };
uniform int n;
uniform int m;
uniform uint count;
uniform int tri;
uniform int want;
uniform int upper;

#if CHOLESKY
int at(int base, int i, int j) { return upper != 0 ? base + j * n + i : base + i * n + j; }

void main() {
    uint bi = linear_index();
    if (bi >= count) return;
    int base = int(bi) * n * n;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) y[base + i * n + j] = 0.0;
    for (int j = 0; j < n; ++j) {
        float d = a[base + j * n + j];
        for (int k = 0; k < j; ++k) { float l = y[at(base, j, k)]; d -= l * l; }
        float root = sqrt(d);
        y[at(base, j, j)] = root;
        for (int i = j + 1; i < n; ++i) {
            float v = 0.5 * (a[base + i * n + j] + a[base + j * n + i]);
            for (int k = 0; k < j; ++k) v -= y[at(base, i, k)] * y[at(base, j, k)];
            y[at(base, i, j)] = v / root;
        }
    }
}
#else
void main() {
    uint bi = linear_index();
    if (bi >= count) return;
    int w = n + m;
    int base = int(bi) * n * w;
    for (int r = 0; r < n; ++r) {
        for (int c = 0; c < n; ++c) {
            float v = a[int(bi) * n * n + r * n + c];
            if ((tri == 1 && c > r) || (tri == 2 && c < r)) v = 0.0;
            s[base + r * w + c] = v;
        }
        for (int j = 0; j < m; ++j) {
#if IDENTITY
            s[base + r * w + n + j] = r == j ? 1.0 : 0.0;
#else
            s[base + r * w + n + j] = b[int(bi) * n * m + r * m + j];
#endif
        }
    }
    float det = 1.0, sgn = 1.0, logabs = 0.0;
    for (int col = 0; col < n; ++col) {
        int p = col;
        float best = abs(s[base + col * w + col]);
        for (int r = col + 1; r < n; ++r) {
            float v = abs(s[base + r * w + col]);
            if (v > best) { best = v; p = r; }
        }
        if (p != col) {
            for (int c = 0; c < w; ++c) {
                float t = s[base + col * w + c];
                s[base + col * w + c] = s[base + p * w + c];
                s[base + p * w + c] = t;
            }
            det = -det; sgn = -sgn;
        }
        float piv = s[base + col * w + col];
        det *= piv;
        sgn *= sign(piv);
        logabs += log(abs(piv));
        if (piv == 0.0) continue;
        for (int r = (want == 1 ? col + 1 : 0); r < n; ++r) {
            if (r == col) continue;
            float f = s[base + r * w + col] / piv;
            if (f == 0.0) continue;
            for (int c = col; c < w; ++c) s[base + r * w + c] -= f * s[base + col * w + c];
        }
    }
    if (want == 1) {
        y[int(bi) * 3] = det;
        y[int(bi) * 3 + 1] = sgn;
        y[int(bi) * 3 + 2] = logabs;
        return;
    }
    for (int r = 0; r < n; ++r)
        for (int j = 0; j < m; ++j)
            y[int(bi) * n * m + r * m + j] = s[base + r * w + n + j] / s[base + r * w + r];
}
#endif
