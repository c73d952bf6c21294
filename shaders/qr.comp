#version 430
// Householder QR of each matrix a [m, n] of a batch, as LAPACK's geqrf + orgqr (jnp.linalg.qr on
// CPU): reflector j has beta = -sign(alpha) * |(alpha, x)| (alpha >= 0 counts as positive),
// tau = (beta - alpha) / beta, v = (1, x / (alpha - beta)); no reflection (tau 0) where x is 0.
// r [kr, n]: the upper triangle; q [m, kq] = H_0 ... H_{k-1} applied to the identity's columns.
// s: scratch of m * n + k floats per matrix (the reduced matrix, then the taus).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) buffer S { float s[]; };
layout(std430, binding = 2) writeonly buffer Q { float q[]; };
layout(std430, binding = 3) writeonly buffer R { float r[]; };
layout(std430, binding = 4) buffer Work { float wq[]; };
uniform int m;
uniform int n;
uniform int k;      // min(m, n): reflectors
uniform int kq;     // columns of q
uniform int kr;     // rows of r
uniform uint count;

void main() {
    uint bi = linear_index();
    if (bi >= count) return;
    int base = int(bi) * (m * n + k);
    int src = int(bi) * m * n;
    for (int i = 0; i < m * n; ++i) s[base + i] = a[src + i];
    int taus = base + m * n;
    for (int j = 0; j < k; ++j) {
        float alpha = s[base + j * n + j];
        float xx = 0.0;
        for (int i = j + 1; i < m; ++i) xx += s[base + i * n + j] * s[base + i * n + j];
        float tau = 0.0;
        if (xx != 0.0) {
            float norm = sqrt(alpha * alpha + xx);
            float beta = alpha >= 0.0 ? -norm : norm;
            tau = (beta - alpha) / beta;
            float scale = 1.0 / (alpha - beta);
            for (int i = j + 1; i < m; ++i) s[base + i * n + j] *= scale;
            s[base + j * n + j] = beta;
            for (int c = j + 1; c < n; ++c) {
                float w = s[base + j * n + c];
                for (int i = j + 1; i < m; ++i) w += s[base + i * n + j] * s[base + i * n + c];
                w *= tau;
                s[base + j * n + c] -= w;
                for (int i = j + 1; i < m; ++i) s[base + i * n + c] -= w * s[base + i * n + j];
            }
        }
        s[taus + j] = tau;
    }
    int rb = int(bi) * kr * n;
    for (int i = 0; i < kr; ++i)
        for (int c = 0; c < n; ++c) r[rb + i * n + c] = c >= i && i < k ? s[base + i * n + c] : 0.0;
    int qb = int(bi) * m * kq;
    for (int i = 0; i < m; ++i)
        for (int c = 0; c < kq; ++c) wq[qb + i * kq + c] = i == c ? 1.0 : 0.0;
    for (int j = k - 1; j >= 0; --j) {
        float tau = s[taus + j];
        if (tau == 0.0) continue;
        for (int c = 0; c < kq; ++c) {
            float w = wq[qb + j * kq + c];
            for (int i = j + 1; i < m; ++i) w += s[base + i * n + j] * wq[qb + i * kq + c];
            w *= tau;
            wq[qb + j * kq + c] -= w;
            for (int i = j + 1; i < m; ++i) wq[qb + i * kq + c] -= w * s[base + i * n + j];
        }
    }
    for (int i = 0; i < m * kq; ++i) q[qb + i] = wq[qb + i];
}
