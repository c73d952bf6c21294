#version 430
// Attention weights in one pass per row: scores of one query position against every key
// position, masking, and a numerically stable softmax over the keys (as jax.nn.softmax does).
// Layouts (C order): q (G, T, N, H), k (G, S, N, H) -> p (G, N, T, S). G folds the batch-like
// dimensions, N is the head, T / S the query / key positions, H the depth. One invocation per
// (g, n, t) row; the raw scores are parked in p and rewritten as probabilities.
// Defines:
//   ADDITIVE     0: score = scale * sum_h q*k.  1: score = scale * sum_h c_h * tanh(tanh_scale*(q+k))
//   HAS_COEF     ADDITIVE only: c_h read from `coef` (else 1)
//   HAS_MASK     read `mask` (broadcast through the strides m_s*); nonzero keeps a position
//   MASK_INT     the mask buffer holds int32 (else float32)
//   CAUSAL       keep s <= t only;  WINDOW: keep |t - s| < window only
//   MASK_SUBTRACT  a masked score becomes score - mask_fill (else it becomes mask_fill)
//   ZERO_MASKED  masked probabilities are set to 0 after the softmax
//   VEC4         H % 4 == 0 and dot scores: q and k read as vec4
#include "common.glsl"
#include "activations.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#if VEC4
// H % 4 == 0: every row starts on a vec4 boundary, so q and k are read four floats at a time.
layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };
layout(std430, binding = 1) readonly buffer K { vec4 k4[]; };
#else
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
#endif
layout(std430, binding = 2) readonly buffer C { float coef[]; };
#if MASK_INT
layout(std430, binding = 3) readonly buffer M { int mask[]; };
#else
layout(std430, binding = 3) readonly buffer M { float mask[]; };
#endif
layout(std430, binding = 4) buffer P { float p[]; };
uniform int G;
uniform int N;
uniform int T;
uniform int S;
uniform int H;
uniform float scale;
uniform float tanh_scale;
uniform float mask_fill;
uniform int m_sg;
uniform int m_sn;
uniform int m_st;
uniform int m_ss;
uniform int window;

bool kept(int g, int n, int t, int s) {
    bool keep = true;
#if HAS_MASK
    keep = mask[g * m_sg + n * m_sn + t * m_st + s * m_ss] != 0;
#endif
#if CAUSAL
    keep = keep && s <= t;
#endif
#if WINDOW
    keep = keep && abs(t - s) < window;
#endif
    return keep;
}

void main() {
    int row = int(linear_index());
    if (row >= G * N * T) return;
    int t = row % T;
    int n = (row / T) % N;
    int g = row / (T * N);
    int q_base = ((g * T + t) * N + n) * H;
    int k_base = g * S * N * H + n * H;
    int k_step = N * H;
    int p_base = row * S;

    float m = -1.0 / 0.0;
    for (int s = 0; s < S; ++s) {
        int kb = k_base + s * k_step;
        float acc = 0.0;
#if ADDITIVE
        for (int h = 0; h < H; ++h) {
#if HAS_COEF
            float c = coef[h];
#else
            float c = 1.0;
#endif
            acc += c * act_tanh(tanh_scale * (q[q_base + h] + k[kb + h]));
        }
#elif VEC4
        int q4_base = q_base / 4, k4_base = kb / 4;
        for (int h = 0; h < H / 4; ++h) acc += dot(q4[q4_base + h], k4[k4_base + h]);
#else
        for (int h = 0; h < H; ++h) acc += q[q_base + h] * k[kb + h];
#endif
        float score = acc * scale;
        if (!kept(g, n, t, s)) {
#if MASK_SUBTRACT
            score = score - mask_fill;
#else
            score = mask_fill;
#endif
        }
        p[p_base + s] = score;
        m = max(m, score);
    }
    // Kahan summation: the sum over many keys stays within a few ulps of a tree reduction.
    float sum = 0.0, comp = 0.0;
    for (int s = 0; s < S; ++s) {
        float e = exp(p[p_base + s] - m);
        p[p_base + s] = e;
        float term = e - comp;
        float tot = sum + term;
        comp = (tot - sum) - term;
        sum = tot;
    }
    for (int s = 0; s < S; ++s) {
        float value = p[p_base + s] / sum;
#if ZERO_MASKED
        if (!kept(g, n, t, s)) value = 0.0;
#endif
        p[p_base + s] = value;
    }
}
