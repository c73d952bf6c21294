#version 430
// Copies a buffer into a 2D texture laid out row by row (width = texture width).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#if IS_INT
layout(std430, binding = 0) readonly buffer Src { int src[]; };
layout(r32i, binding = 0) uniform writeonly iimage2D dst;
#else
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(r32f, binding = 0) uniform writeonly image2D dst;
#endif
uniform uint n;
uniform int width;

void main() {
    uint i = linear_index();
    if (i >= n) return;
#if IS_INT
    imageStore(dst, ivec2(int(i) % width, int(i) / width), ivec4(src[i], 0, 0, 0));
#else
    imageStore(dst, ivec2(int(i) % width, int(i) / width), vec4(src[i], 0.0, 0.0, 0.0));
#endif
}
