#version 430
// y = a strided window of x (numpy's x[start0:stop0:step0, ...]): output element (c0, ..., c_{r-1})
// is x at offset base + sum(c_d * in_strides[d]), where in_strides[d] is x's stride along axis d
// times that axis's step (negative for reversed slices) and base the offset of the first element.
// Words are copied as raw bits (uint), so float32 and int32 tensors share this shader.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#define MAX_RANK 8
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
uniform int rank;
uniform uint n;
uniform int base;
uniform int out_shape[MAX_RANK];
uniform int in_strides[MAX_RANK];

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int src = base;
    uint rem = i;
    for (int d = rank - 1; d >= 0; --d) {
        src += int(rem % uint(out_shape[d])) * in_strides[d];
        rem /= uint(out_shape[d]);
    }
    y[i] = x[src];
}
