#version 430
// Per-channel maps, the channel of element i being (i / inner) % channels:
//   MODE_AFFINE: y = x * scale[c] + shift[c]   (inference BatchNormalization, Rescaling, ...)
//   MODE 1:      y = max(x, 0) - scale[c] * max(-x, 0)   (PReLU as Keras computes it)
//   MODE 2:      y = (x - shift[c]) / scale[c]            (Normalization: (x - mean) / std)
//   MODE 3:      y = shift[c] + x * scale[c]              (Normalization with invert=True)
// Defines: MODE, HAS_SHIFT (mode 0), X_INT (the input is int32; it is converted to float).
// VEC4 (float input, n % 4 == 0): 4 consecutive elements per invocation, x read and y written
// as vec4 (llvmpipe pays a bounds-checked loop per storage-buffer access, whatever its width).
// VIEWS (with VEC4, kerasgl/tuning.py elementwise_views): x through an rgba32f view, scale and
// shift through r32f views (kerasgl/buffer_views.py): the same values, gathered by llvmpipe.
// Each of x, scale and shift may be a texture, read in place (X_TEXTURE, SCALE_TEXTURE,
// SHIFT_TEXTURE: texture_operand.glsl; an int32 x as r32i), and y a texture written in place
// (Y_TEXTURE); VIEWS then applies to the operands that are buffers.
// Each element gets the same float operations on every path.
#include "common.glsl"
#include "texture_operand.glsl"
layout(local_size_x = LOCAL_SIZE) in;
// x: LOAD_X4(i) is vec4 i (VEC4), LOAD_X(i) element i (else).
#if defined(X_TEXTURE) && X_INT
INT_TEXTURE_OPERAND(x_texture, 0);
#define LOAD_X(i) TEXEL(x_texture, i)
#elif defined(X_TEXTURE)
TEXTURE_OPERAND(x_texture, 0, TEXEL_FORMAT_0);
#define LOAD_X(i) TEXEL(x_texture, i)
#define LOAD_X4(i) TEXEL4(x_texture, i)
#elif VEC4 && VIEWS
layout(rgba32f, binding = 0) readonly uniform imageBuffer x_view;
#define LOAD_X4(i) imageLoad(x_view, int(i))
#elif X_INT
layout(std430, binding = 0) readonly buffer X { int x[]; };   // int32 input, cast as Keras does
#define LOAD_X(i) x[i]
#elif VEC4
layout(std430, binding = 0) readonly buffer X { vec4 x4[]; };
#define LOAD_X4(i) x4[i]
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#define LOAD_X(i) x[i]
#endif
#ifdef SCALE_TEXTURE
TEXTURE_OPERAND(scale_texture, 1, TEXEL_FORMAT_1);
#define SCALE(c) TEXEL(scale_texture, c)
#elif VEC4 && VIEWS
layout(r32f, binding = 1) readonly uniform imageBuffer scale_view;
#define SCALE(c) imageLoad(scale_view, int(c)).x
#else
layout(std430, binding = 1) readonly buffer Scale { float scale[]; };
#define SCALE(c) scale[c]
#endif
#ifdef SHIFT_TEXTURE
TEXTURE_OPERAND(shift_texture, 2, TEXEL_FORMAT_2);
#define SHIFT(c) TEXEL(shift_texture, c)
#elif VEC4 && VIEWS
layout(r32f, binding = 2) readonly uniform imageBuffer shift_view;
#define SHIFT(c) imageLoad(shift_view, int(c)).x
#else
layout(std430, binding = 2) readonly buffer Shift { float shift[]; };
#define SHIFT(c) shift[c]
#endif
#if defined(Y_TEXTURE) && VEC4
TEXTURE_RESULT(y_texture, 3, TEXEL_FORMAT_3);
#define STORE_Y4(i, v) STORE_TEXEL4(y_texture, i, v)
#elif defined(Y_TEXTURE)
TEXTURE_RESULT(y_texture, 3, TEXEL_FORMAT_3);
#define STORE_Y(i, v) STORE_TEXEL(y_texture, i, v)
#elif VEC4
layout(std430, binding = 3) writeonly buffer Y { vec4 y4[]; };
#define STORE_Y4(i, v) y4[i] = (v)
#else
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
#define STORE_Y(i, v) y[i] = (v)
#endif
uniform uint n;
uniform uint inner;
uniform uint channels;

float channel_map(float v, uint c) {
#if MODE == 1
    return isnan(v) ? v : max(v, 0.0) - SCALE(c) * max(-v, 0.0);   // relu(NaN) is NaN in Keras
#elif MODE == 2
    return (v - SHIFT(c)) / SCALE(c);
#elif MODE == 3
    return SHIFT(c) + v * SCALE(c);
#else
    v = v * SCALE(c);
#if HAS_SHIFT
    v += SHIFT(c);
#endif
    return v;
#endif
}

void main() {
#if VEC4
    uint i4 = linear_index();
    if (i4 >= n / 4u) return;
    vec4 v = LOAD_X4(i4);
    vec4 result;
    // The channel of element 4 * i4, then stepped along: integer division has no SIMD form on
    // CPUs (llvmpipe runs it lane by lane), so divide once, not four times.
    uint run = (4u * i4) % inner;
    uint c = ((4u * i4) / inner) % channels;
    for (uint k = 0u; k < 4u; ++k) {
        result[k] = channel_map(v[k], c);
        if (++run == inner) {
            run = 0u;
            if (++c == channels) c = 0u;
        }
    }
    STORE_Y4(i4, result);
#else
    uint i = linear_index();
    if (i >= n) return;
    STORE_Y(i, channel_map(float(LOAD_X(i)), (i / inner) % channels));
#endif
}
