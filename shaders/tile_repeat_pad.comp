#version 430
// y = x read through a per-axis index map (tile, repeat, constant padding): for output
// coordinate c_d, t = c_d - offset[d]; outside [0, limit[d]) the output is `fill`, else the input
// index along axis d is (t / divisor[d]) % size[d], at stride in_strides[d].
// Words are copied as raw bits (uint), so float32 and int32 tensors share this shader.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#define MAX_RANK 8
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
uniform int rank;
uniform uint n;
uniform uint fill;                  // the bits of the padding value
uniform int out_shape[MAX_RANK];
uniform int offset[MAX_RANK];
uniform int limit[MAX_RANK];
uniform int divisor[MAX_RANK];
uniform int size[MAX_RANK];
uniform int in_strides[MAX_RANK];

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int src = 0;
    uint rem = i;
    bool inside = true;
    for (int d = rank - 1; d >= 0; --d) {
        int t = int(rem % uint(out_shape[d])) - offset[d];
        rem /= uint(out_shape[d]);
        if (t < 0 || t >= limit[d]) { inside = false; continue; }
        src += ((t / divisor[d]) % size[d]) * in_strides[d];
    }
    y[i] = inside ? x[src] : fill;
}
