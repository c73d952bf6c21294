#version 430
// dst[o, start + t, w] = src[o, t, w] for o < outer, t < rows, w < width: rows of `src` written
// in place into a larger tensor `dst` of `dst_rows` rows per outer index (a KV cache taking the
// keys of new tokens). Words are copied as raw bits (uint): float32 and int32 alike.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) buffer Dst { uint dst[]; };
uniform uint n;            // outer * rows * width
uniform uint block;        // rows * width: one outer index of src
uniform uint dst_block;    // dst_rows * width: one outer index of dst
uniform uint offset;       // start * width

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint o = i / block;
    dst[o * dst_block + offset + (i - o * block)] = src[i];
}
