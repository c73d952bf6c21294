#version 430
// Copies a convolution's input (a buffer of vec4s) into an RGBA32F image, texel i = vec4 i, rows of
// 2^IMAGE_WIDTH_LOG2 texels: conv2d.comp with X_IMAGE then reads it with image loads, which cost
// llvmpipe about half what storage-buffer loads do (see kerasgl/tuning.py). One pass, each value
// read once; the convolution reads every input value many times.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { vec4 x4[]; };
layout(rgba32f, binding = 0) uniform writeonly image2D staged;
uniform uint n_vec4;

void main() {
    uint i = linear_index();
    if (i >= n_vec4) return;
    int t = int(i);
    imageStore(staged, ivec2(t & ((1 << IMAGE_WIDTH_LOG2) - 1), t >> IMAGE_WIDTH_LOG2), x4[i]);
}
