#version 430
// Copies a 2D texture laid out row by row (width = texture width) into a buffer.
#include "common.glsl"
// HALF: the texture holds IEEE halves (r16f: a float16-activation model's tensors), converted by
// the texture unit (a store rounds to the nearest half); the buffer side is float32 either way.
#if HALF
#define FLOAT_TEXEL_FORMAT r16f
#else
#define FLOAT_TEXEL_FORMAT r32f
#endif
layout(local_size_x = LOCAL_SIZE) in;
#if IS_INT
layout(std430, binding = 0) writeonly buffer Dst { int dst[]; };
layout(r32i, binding = 0) uniform readonly iimage2D src;
#else
layout(std430, binding = 0) writeonly buffer Dst { float dst[]; };
layout(FLOAT_TEXEL_FORMAT, binding = 0) uniform readonly image2D src;
#endif
uniform uint n;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int width = imageSize(src).x;     // the texture's rows, whatever its extent
    dst[i] = imageLoad(src, ivec2(int(i) % width, int(i) / width)).r;
}
