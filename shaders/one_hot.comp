#version 430
// y[..., c] = 1.0 where the int32 index x[...] == c, else 0.0 (an index outside [0, depth)
// gives a row of zeros, as jax.nn.one_hot).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { int x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform uint n;
uniform uint depth;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    y[i] = x[i / depth] == int(i % depth) ? 1.0 : 0.0;
}
