#version 430
// c = OP(a, b) elementwise, 4 elements per invocation through vec4 loads and stores: the fast
// path of binary.comp for output sizes divisible by 4 (llvmpipe pays a bounds-checked load per
// buffer access, so one vec4 access costs about what one float access does).
// Each operand is one of: a tensor of the output's shape (default), a uniform (A_SCALAR /
// B_SCALAR), or a per-channel vector broadcast along every dimension but the last (A_CHANNEL /
// B_CHANNEL: shape [1, .., 1, C] with C % 4 == 0, read at vec4 index i % channels4).
// The float ops are binary.comp's own, applied per component, so results are bit-identical.
// ACT: optional epilogue from activations.glsl, as in binary.comp.
#include "common.glsl"
#ifdef MATH_EXTRA
#include "math_extra.glsl"
#endif
#ifdef ACT
#include "activations.glsl"
#endif
#include "texture_operand.glsl"
layout(local_size_x = LOCAL_SIZE) in;
// Where each operand is read from: a number (uniform a_value / b_value); a texture, read in place
// (A_TEXTURE / B_TEXTURE: texture_operand.glsl); with A_VIEW / B_VIEW (kerasgl/tuning.py) an
// rgba32f imageBuffer view of its buffer (kerasgl/buffer_views.py: the same values, gathered by
// llvmpipe); else the buffer. LOAD_A(i) is vec4 i of a's elements (or of its channels) either way.
#if A_SCALAR
#define LOAD_A(i) vec4(a_value)
#elif defined(A_TEXTURE)
TEXTURE_OPERAND(a_texture, 0, TEXEL_FORMAT_0);
#define LOAD_A(i) TEXEL4(a_texture, i)
#elif A_VIEW
layout(rgba32f, binding = 0) readonly uniform imageBuffer a_view;
#define LOAD_A(i) imageLoad(a_view, int(i))
#else
layout(std430, binding = 0) readonly buffer A { vec4 a[]; };
#define LOAD_A(i) a[i]
#endif
#if B_SCALAR
#define LOAD_B(i) vec4(b_value)
#elif defined(B_TEXTURE)
TEXTURE_OPERAND(b_texture, 1, TEXEL_FORMAT_1);
#define LOAD_B(i) TEXEL4(b_texture, i)
#elif B_VIEW
layout(rgba32f, binding = 1) readonly uniform imageBuffer b_view;
#define LOAD_B(i) imageLoad(b_view, int(i))
#else
layout(std430, binding = 1) readonly buffer B { vec4 b[]; };
#define LOAD_B(i) b[i]
#endif
// The result: a buffer, or a texture written in place (C_TEXTURE).
#ifdef C_TEXTURE
TEXTURE_RESULT(c_texture, 2, TEXEL_FORMAT_2);
#define STORE_C(i, v) STORE_TEXEL4(c_texture, i, v)
#else
layout(std430, binding = 2) writeonly buffer C { vec4 c[]; };
#define STORE_C(i, v) c[i] = (v)
#endif
uniform uint n4;         // output size / 4
uniform uint channels4;  // C / 4 for a per-channel operand
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

#ifdef ACT
#define APPLY(x, y) ACT(OP(x, y))
#else
#define APPLY(x, y) OP(x, y)
#endif

void main() {
    uint i = linear_index();
    if (i >= n4) return;
#if A_CHANNEL
    vec4 va = LOAD_A(i % channels4);
#else
    vec4 va = LOAD_A(i);
#endif
#if B_CHANNEL
    vec4 vb = LOAD_B(i % channels4);
#else
    vec4 vb = LOAD_B(i);
#endif
    STORE_C(i, vec4(APPLY(va.x, vb.x), APPLY(va.y, vb.y), APPLY(va.z, vb.z), APPLY(va.w, vb.w)));
}
