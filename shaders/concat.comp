#version 430
// Copy one input, seen as [outer, len, inner], into its slice of the output [outer, total, inner]
// starting at `offset` along the middle axis (one dispatch per input of a concatenation).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform uint n;          // elements of the input
uniform uint slice;      // len * inner: one outer step of the input
uniform uint out_slice;  // total * inner: one outer step of the output
uniform uint offset;     // offset * inner

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint o = i / slice;
    y[o * out_slice + offset + (i - o * slice)] = x[i];
}
