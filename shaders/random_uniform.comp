#version 430
// y = minval + (maxval - minval) * u, u uniform in [0, 1) from Philox(counter = block index, key =
// seed). Each invocation makes one block of 4 numbers (one Philox call gives 128 random bits).
#include "common.glsl"
#include "random_philox.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) writeonly buffer Y { float y[]; };
uniform uint n;
uniform uvec2 seed;
uniform float minval;
uniform float maxval;

void main() {
    uint block = linear_index();
    uint first = block * 4u;
    if (first >= n) return;
    vec4 u = uniform01(philox(uvec4(block, 0u, 0u, 0u), seed));
    vec4 v = minval + (maxval - minval) * u;
    for (uint k = 0u; k < 4u && first + k < n; ++k) y[first + k] = v[k];
}
