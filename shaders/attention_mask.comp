#version 430
// Logical AND of one or two masks broadcast to an output shape, written as float32 0 / 1
// (a position is kept where every input is nonzero). Used to merge an attention layer's masks
// (query, value, key, explicit attention_mask, causal) into the one mask attention_softmax reads.
// Defines: HAS_B (a second mask), A_INT / B_INT (that mask holds int32, else float32).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#define MAX_RANK 8
#if A_INT
layout(std430, binding = 0) readonly buffer A { int a[]; };
#else
layout(std430, binding = 0) readonly buffer A { float a[]; };
#endif
#if B_INT
layout(std430, binding = 1) readonly buffer B { int b[]; };
#else
layout(std430, binding = 1) readonly buffer B { float b[]; };
#endif
layout(std430, binding = 2) writeonly buffer C { float c[]; };
uniform uint n;
uniform int rank;
uniform int out_shape[MAX_RANK];
uniform int a_strides[MAX_RANK];   // 0 along broadcast dimensions
uniform int b_strides[MAX_RANK];

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int rem = int(i), ia = 0, ib = 0;
    for (int d = rank - 1; d >= 0; --d) {
        int coord = rem % out_shape[d];
        rem /= out_shape[d];
        ia += coord * a_strides[d];
        ib += coord * b_strides[d];
    }
    bool keep = a[ia] != 0;
#if HAS_B
    keep = keep && b[ib] != 0;
#endif
    c[i] = keep ? 1.0 : 0.0;
}
