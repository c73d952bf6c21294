#version 430
// Copies a buffer into a 2D texture laid out row by row (width = texture width).
#include "common.glsl"
#include "texture_operand.glsl"
// HALF: the texture holds IEEE halves (r16f: a float16-activation model's tensors), converted by
// the texture unit (a store rounds to the nearest half); the buffer side is float32 either way.
#if HALF
#define FLOAT_TEXEL_FORMAT r16f
#else
#define FLOAT_TEXEL_FORMAT r32f
#endif
layout(local_size_x = LOCAL_SIZE) in;
#if IS_INT
layout(std430, binding = 0) readonly buffer Src { int src[]; };
layout(r32i, binding = 0) uniform writeonly iimage2D dst;
#else
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(FLOAT_TEXEL_FORMAT, binding = 0) uniform writeonly image2D dst;
#endif
uniform uint n;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int width = imageSize(dst).x;     // the texture's rows, whatever its extent
#if IS_INT
    imageStore(dst, ivec2(int(i) % width, int(i) / width), ivec4(src[i], 0, 0, 0));
#else
    imageStore(dst, ivec2(int(i) % width, int(i) / width), STORED(src[i]));   // (rounded: HALF_STORE_ROUNDING)
#endif
}
