#version 430
// y = mean + stddev * z, z standard normal by the Box-Muller transform of Philox uniforms. Each
// invocation makes one block of 4 numbers (two Box-Muller pairs from one Philox call).
#include "common.glsl"
#include "random_philox.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) writeonly buffer Y { float y[]; };
uniform uint n;
uniform uvec2 seed;
uniform float mean;
uniform float stddev;

const float TWO_PI = 6.283185307179586;

void main() {
    uint block = linear_index();
    uint first = block * 4u;
    if (first >= n) return;
    // Counter word 1 = 1 keeps these streams apart from random_uniform's for the same seed.
    vec4 u = uniform01(philox(uvec4(block, 1u, 0u, 0u), seed));
    // Radii from (0, 1]: log(0) would be -inf.
    vec2 radius = sqrt(-2.0 * log(1.0 - u.xz));
    vec2 angle = TWO_PI * u.yw;
    vec4 z = vec4(radius.x * cos(angle.x), radius.x * sin(angle.x),
                  radius.y * cos(angle.y), radius.y * sin(angle.y));
    vec4 v = mean + stddev * z;
    for (uint k = 0u; k < 4u && first + k < n; ++k) y[first + k] = v[k];
}
