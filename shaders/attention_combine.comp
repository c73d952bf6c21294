#version 430
// Weighted sum of values: out[g, t, n, h] = sum_s p[g, n, t, s] * v[g, s, n, h].
// Layouts (C order): p (G, N, T, S), v (G, S, N, H) -> out (G, T, N, H), the layout the output
// projection reads. Each invocation computes HB = 4 consecutive h of one (g, t, n), so every
// weight is loaded once per 4 outputs.
// Defines: ROW_MASK (rows whose `row_mask` entry is 0 are written as 0; strides r_sg, r_st),
// MASK_INT (the row mask holds int32, else float32), VEC4 (H % 4 == 0: values read as vec4).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#define HB 4
layout(std430, binding = 0) readonly buffer Pw { float p[]; };
#if VEC4
// H % 4 == 0: each block of 4 values starts on a vec4 boundary.
layout(std430, binding = 1) readonly buffer V { vec4 v4[]; };
#else
layout(std430, binding = 1) readonly buffer V { float v[]; };
#endif
#if MASK_INT
layout(std430, binding = 2) readonly buffer R { int row_mask[]; };
#else
layout(std430, binding = 2) readonly buffer R { float row_mask[]; };
#endif
layout(std430, binding = 3) writeonly buffer O { float o[]; };
uniform int G;
uniform int N;
uniform int T;
uniform int S;
uniform int H;
uniform int r_sg;
uniform int r_st;

void main() {
    int blocks = (H + HB - 1) / HB;
    int index = int(linear_index());
    if (index >= G * T * N * blocks) return;
    int hb = index % blocks;
    int n = (index / blocks) % N;
    int t = (index / (blocks * N)) % T;
    int g = index / (blocks * N * T);
    int h0 = hb * HB;
    int count = min(HB, H - h0);
    int out_base = ((g * T + t) * N + n) * H + h0;
#if ROW_MASK
    if (row_mask[g * r_sg + t * r_st] == 0) {
        for (int j = 0; j < count; ++j) o[out_base + j] = 0.0;
        return;
    }
#endif
    int p_base = ((g * N + n) * T + t) * S;
    int v_base = g * S * N * H + n * H + h0;
    int v_step = N * H;
    vec4 acc = vec4(0.0);
#if VEC4
    for (int s = 0; s < S; ++s) acc += p[p_base + s] * v4[(v_base + s * v_step) / 4];
#else
    if (count == HB) {
        for (int s = 0; s < S; ++s) {
            int vb = v_base + s * v_step;
            acc += p[p_base + s] * vec4(v[vb], v[vb + 1], v[vb + 2], v[vb + 3]);
        }
    } else {
        for (int s = 0; s < S; ++s) {
            int vb = v_base + s * v_step;
            float w = p[p_base + s];
            for (int j = 0; j < count; ++j) acc[j] += w * v[vb + j];
        }
    }
#endif
    for (int j = 0; j < count; ++j) o[out_base + j] = acc[j];
}
