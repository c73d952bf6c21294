#version 430
// y = x * min(rsqrt(sum(x^2)), 1 / epsilon) over a set of axes, as keras.ops.normalize(order=2).
// One invocation per kept position (see axis_groups.glsl). Defines: RED_GROUPS.
#include "common.glsl"
#include "axis_groups.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform int n_outer;
uniform float epsilon;

void main() {
    int outer = int(linear_index());
    if (outer >= n_outer) return;
    int base = kept_offset(outer);
    float sum = 0.0, comp = 0.0;
    for (int r = 0; r < red_len; ++r) {
        float v = x[base + reduced_offset(r)];
        float term = v * v - comp;
        float t = sum + term;
        comp = isinf(t) ? 0.0 : (t - sum) - term;   // an overflow stays inf, not inf - inf
        sum = t;
    }
    float inv = nan_min(inversesqrt(sum), 1.0 / epsilon);   // a NaN in the group: all NaN
    for (int r = 0; r < red_len; ++r) {
        int i = base + reduced_offset(r);
        y[i] = x[i] * inv;
    }
}
