#version 430
// y = x with its axes permuted: y[c0, ..., c_{rank-1}] = x at offset sum(c_d * in_strides[d]),
// where in_strides[d] is x's stride along the axis that becomes output axis d. Each invocation
// writes up to 4 neighbouring outputs along the last output axis (index maths done once).
// Words are copied as raw bits (uint), so float32 and int32 tensors share this shader.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#define MAX_RANK 8
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
uniform int rank;
uniform uint rows;                  // product of every output dimension but the last
uniform int out_shape[MAX_RANK];
uniform int in_strides[MAX_RANK];

void main() {
    uint idx = linear_index();
    int last = out_shape[rank - 1];
    uint quads = uint((last + 3) / 4);
    if (idx >= rows * quads) return;
    uint row = idx / quads;
    int col = int(idx % quads) * 4;
    int src = col * in_strides[rank - 1];
    uint rem = row;
    for (int d = rank - 2; d >= 0; --d) {
        src += int(rem % uint(out_shape[d])) * in_strides[d];
        rem /= uint(out_shape[d]);
    }
    uint dst = row * uint(last) + uint(col);
    int step = in_strides[rank - 1];
    for (int k = 0; k < 4 && col + k < last; ++k) y[dst + uint(k)] = x[src + k * step];
}
