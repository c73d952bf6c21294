#version 430
// c = OP(a, b) elementwise with numpy broadcasting.
// Defines: OP (a binary_* function below); A_SCALAR / B_SCALAR (operand is the uniform a_value /
// b_value instead of a buffer); BROADCAST (1: index each operand through strides, 0: same shapes);
// ACT (optional: an act_* function of activations.glsl applied to the result, the epilogue of a
// merge that fusion.py joined with the activation after it; parameters in act_p0..act_p2).
#include "common.glsl"
#ifdef MATH_EXTRA
#include "math_extra.glsl"
#endif
#ifdef ACT
#include "activations.glsl"
#endif
layout(local_size_x = LOCAL_SIZE) in;
#define MAX_RANK 8
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
uniform uint n;
uniform int rank;
uniform int out_shape[MAX_RANK];
uniform int a_strides[MAX_RANK];   // 0 along broadcast dimensions
uniform int b_strides[MAX_RANK];
uniform float a_value;
uniform float b_value;

float binary_add(float x, float y) { return x + y; }
float binary_sub(float x, float y) { return x - y; }
float binary_mul(float x, float y) { return x * y; }
float binary_div(float x, float y) { return x / y; }
float binary_maximum(float x, float y) { return nan_max(x, y); }   // jnp.maximum: NaN wins
float binary_minimum(float x, float y) { return nan_min(x, y); }
float binary_pow(float x, float y) {
    // GLSL pow is undefined for x < 0; numpy gives a real result for integer exponents.
    if (x >= 0.0) return pow(x, y);
    if (y == floor(y)) { float p = pow(-x, y); return mod(y, 2.0) == 0.0 ? p : -p; }
    return 0.0 / 0.0;
}
float binary_squared_difference(float x, float y) { float d = x - y; return d * d; }

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int ia = int(i), ib = int(i);
#if BROADCAST
    int rem = int(i);
    ia = 0; ib = 0;
    for (int d = rank - 1; d >= 0; --d) {
        int coord = rem % out_shape[d];
        rem /= out_shape[d];
        ia += coord * a_strides[d];
        ib += coord * b_strides[d];
    }
#endif
#if A_SCALAR
    float va = a_value;
#else
    float va = a[ia];
#endif
#if B_SCALAR
    float vb = b_value;
#else
    float vb = b[ib];
#endif
#ifdef ACT
    c[i] = ACT(OP(va, vb));
#else
    c[i] = OP(va, vb);
#endif
}
