#version 430
// c = OP(a, b) elementwise with numpy broadcasting.
// Defines: OP (a binary_* function below); A_SCALAR / B_SCALAR (operand is the uniform a_value /
// b_value instead of a tensor); BROADCAST (1: index each operand through strides, 0: same shapes);
// ACT (optional: an act_* function of activations.glsl applied to the result, the epilogue of a
// merge that fusion.py joined with the activation after it; parameters in act_p0..act_p2).
#include "common.glsl"
#ifdef MATH_EXTRA
#include "math_extra.glsl"
#endif
#ifdef ACT
#include "activations.glsl"
#endif
#include "texture_operand.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#define MAX_RANK 8
// Each operand is a number (uniform a_value / b_value), a texture read in place (A_TEXTURE /
// B_TEXTURE: texture_operand.glsl) or a buffer; the result a buffer or a texture (C_TEXTURE).
#if A_SCALAR
#define LOAD_A(i) a_value
#elif defined(A_TEXTURE)
TEXTURE_OPERAND(a_texture, 0, TEXEL_FORMAT_0);
#define LOAD_A(i) TEXEL(a_texture, i)
#else
layout(std430, binding = 0) readonly buffer A { float a[]; };
#define LOAD_A(i) a[i]
#endif
#if B_SCALAR
#define LOAD_B(i) b_value
#elif defined(B_TEXTURE)
TEXTURE_OPERAND(b_texture, 1, TEXEL_FORMAT_1);
#define LOAD_B(i) TEXEL(b_texture, i)
#else
layout(std430, binding = 1) readonly buffer B { float b[]; };
#define LOAD_B(i) b[i]
#endif
#ifdef C_TEXTURE
TEXTURE_RESULT(c_texture, 2, TEXEL_FORMAT_2);
#define STORE_C(i, v) STORE_TEXEL(c_texture, i, v)
#else
layout(std430, binding = 2) writeonly buffer C { float c[]; };
#define STORE_C(i, v) c[i] = (v)
#endif
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
    float va = LOAD_A(ia);
    float vb = LOAD_B(ib);
#ifdef ACT
    STORE_C(i, ACT(OP(va, vb)));
#else
    STORE_C(i, OP(va, vb));
#endif
}
