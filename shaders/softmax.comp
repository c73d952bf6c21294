#version 430
// softmax or log_softmax over a set of axes, numerically stable (the maximum is subtracted first,
// as jax.nn.softmax does). One invocation per kept position; see axis_groups.glsl.
// Defines: LOG (1: log_softmax), RED_GROUPS.
#include "common.glsl"
#include "axis_groups.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform int n_outer;

void main() {
    int outer = int(linear_index());
    if (outer >= n_outer) return;
    int base = kept_offset(outer);
    float m = -1.0 / 0.0;
    for (int r = 0; r < red_len; ++r) m = max(m, x[base + reduced_offset(r)]);
    // Kahan summation: the sum over a long axis stays within a few ulps of a tree reduction.
    float sum = 0.0, comp = 0.0;
    for (int r = 0; r < red_len; ++r) {
        float term = exp(x[base + reduced_offset(r)] - m) - comp;
        float t = sum + term;
        comp = (t - sum) - term;
        sum = t;
    }
#if LOG
    // (x - max) - log(sum), in jax.nn.log_softmax's order: m + log(sum) would round away log(sum)
    // next to a huge maximum.
    float log_sum = log(sum);
    for (int r = 0; r < red_len; ++r) {
        int i = base + reduced_offset(r);
        y[i] = (x[i] - m) - log_sum;
    }
#else
    for (int r = 0; r < red_len; ++r) {
        int i = base + reduced_offset(r);
        y[i] = exp(x[i] - m) / sum;
    }
#endif
}
