#version 430
// Copies a 2D texture laid out row by row (width = texture width) into a buffer.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#if IS_INT
layout(std430, binding = 0) writeonly buffer Dst { int dst[]; };
layout(r32i, binding = 0) uniform readonly iimage2D src;
#else
layout(std430, binding = 0) writeonly buffer Dst { float dst[]; };
layout(r32f, binding = 0) uniform readonly image2D src;
#endif
uniform uint n;
uniform int width;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    dst[i] = imageLoad(src, ivec2(int(i) % width, int(i) / width)).r;
}
