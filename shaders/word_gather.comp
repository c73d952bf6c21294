#version 430
// Value-independent data movement through a precomputed index map (kerasgl/ops/word_gather.py).
// GATHER (default): the output seen as rows of `inner_out` words; word c of row r is
//   fill                           where map[c] < 0,
//   x[r * inner_src + map[c]]      elsewhere.
// PLACE: copies input word i to y[(i / width) * row + offset + i % width] (several inputs side by
// side in one source, each sample's words after the previous input's).
// Words are copied as raw bits (uint), so float32 and int32 tensors share this shader.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
#if PLACE
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
uniform uint n;
uniform uint width;
uniform uint row;
uniform uint offset;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint r = i / width;
    y[r * row + offset + (i - r * width)] = x[i];
}
#else
layout(std430, binding = 1) readonly buffer M { int m[]; };
layout(std430, binding = 2) writeonly buffer Y { uint y[]; };
uniform uint n;
uniform uint inner_out;
uniform uint inner_src;
uniform uint fill;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint r = i / inner_out;
    int s = m[i - r * inner_out];
    y[i] = s < 0 ? fill : x[r * inner_src + uint(s)];
}
#endif
