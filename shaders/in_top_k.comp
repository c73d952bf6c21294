#version 430
// keras.ops.in_top_k on Keras's JAX backend: whether the target class's prediction ranks within
// the k largest of its row, rank = 1 + the number of predictions strictly greater. A target's
// NaN prediction counts as -inf; a negative target counts from the end (jnp.take_along_axis), one
// out of range reads NaN, so -inf. The result is a bool word (0 / 1) per row.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer T { int targets[]; };
layout(std430, binding = 1) readonly buffer P { float p[]; };
layout(std430, binding = 2) writeonly buffer Y { int y[]; };
uniform uint rows;
uniform uint classes;
uniform int k;

void main() {
    uint i = linear_index();
    if (i >= rows) return;
    int c = targets[i];
    if (c < 0) c += int(classes);
    float target = uintBitsToFloat(0xff800000u);
    if (c >= 0 && c < int(classes)) {
        float v = p[i * classes + uint(c)];
        if (!isnan(v)) target = v;
    }
    int greater = 0;
    for (uint j = 0u; j < classes; ++j) greater += int(p[i * classes + j] > target);
    y[i] = int(1 + greater <= k);
}
