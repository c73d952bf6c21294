#version 430
// out = cond ? x1 : x2 elementwise with numpy broadcasting of all three, as words: x1 and x2
// already hold the output's dtype (kerasgl/ops/typed.py converts them). Defines: COND_FLOAT (the
// condition's words are float32: nonzero is true), X_SCALAR / Y_SCALAR (the uniform x_word /
// y_word instead of a buffer), BROADCAST (index each operand through its strides).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#define MAX_RANK 8
layout(std430, binding = 0) readonly buffer Cond { uint cond[]; };
layout(std430, binding = 1) readonly buffer X { uint xs[]; };
layout(std430, binding = 2) readonly buffer Y { uint ys[]; };
layout(std430, binding = 3) writeonly buffer Out { uint result[]; };
uniform uint n;
uniform int rank;
uniform int out_shape[MAX_RANK];
uniform int c_strides[MAX_RANK];
uniform int x_strides[MAX_RANK];
uniform int y_strides[MAX_RANK];
uniform uint x_word;
uniform uint y_word;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int ic = int(i), ix = int(i), iy = int(i);
#if BROADCAST
    int rem = int(i);
    ic = 0; ix = 0; iy = 0;
    for (int d = rank - 1; d >= 0; --d) {
        int coord = rem % out_shape[d];
        rem /= out_shape[d];
        ic += coord * c_strides[d];
        ix += coord * x_strides[d];
        iy += coord * y_strides[d];
    }
#endif
    uint wc = cond[ic];
#if COND_FLOAT
    bool take = (wc & 0x7fffffffu) != 0u;
#else
    bool take = wc != 0u;
#endif
#if X_SCALAR
    uint wx = x_word;
#else
    uint wx = xs[ix];
#endif
#if Y_SCALAR
    uint wy = y_word;
#else
    uint wy = ys[iy];
#endif
    result[i] = take ? wx : wy;
}
