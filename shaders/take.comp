#version 430
// keras.ops.take / take_along_axis with indices in a tensor (kerasgl/ops/word_gather.py). The
// output is seen as [outer, count, inner] and the input as [outer, axis_len, inner]; output word
// (o, p, k) is input word (o, j, k) with j = idx[p] (ALONG: j = idx[i], the indices having the
// output's shape). Negative j in [-axis_len, -1] count from the end; any other j outside
// [0, axis_len) gives `fill` (NaN / INT_MIN, as jnp.take's default "fill" mode).
// Words are copied as raw bits (uint), so float32 and int32 tensors share this shader.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer Y { uint y[]; };
uniform uint n;
uniform uint inner;
uniform uint count;
uniform int axis_len;
uniform uint fill;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint t = i / inner;
    uint k = i - t * inner;
    uint o = t / count;
#if ALONG
    int j = idx[i];
#else
    int j = idx[t - o * count];
#endif
    if (j < 0) j += axis_len;
    y[i] = (j < 0 || j >= axis_len) ? fill : x[(o * uint(axis_len) + uint(j)) * inner + k];
}
