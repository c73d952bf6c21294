#version 430
// y = ACT(x), elementwise. ACT names a function from activations.glsl.
#include "common.glsl"
#include "activations.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform uint n;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    y[i] = ACT(x[i]);
}
