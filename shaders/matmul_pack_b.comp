#version 430
// Packs B [K, N] of a matmul into the layout conv2d.comp reads its weights in, so a large matmul
// runs as a 1x1 convolution over M "pixels" (kerasgl/ops/matmul.py, matmul_as_conv):
//   [block][k][COUT_VEC] vec4, block = 4 * COUT_VEC columns, zero past column N.
// B is read through strides (a transposed B costs nothing). Into a buffer, or (TO_IMAGE) into an
// RGBA32F image, texel i = vec4 i, rows of 2^IMAGE_WIDTH_LOG2 texels.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer B { float b[]; };
#if TO_IMAGE
layout(rgba32f, binding = 0) uniform writeonly image2D packed_image;
#else
layout(std430, binding = 1) writeonly buffer P { vec4 packed_b[]; };
#endif
uniform int K;
uniform int N;
uniform int b_rs;
uniform int b_cs;
uniform uint n_vec4;   // blocks * K * COUT_VEC

void main() {
    uint i = linear_index();
    if (i >= n_vec4) return;
    int t = int(i);
    int v = t % COUT_VEC;
    int rest = t / COUT_VEC;
    int k = rest % K;
    int block = rest / K;
    int n = block * 4 * COUT_VEC + 4 * v;
    vec4 value = vec4(0.0);
    for (int j = 0; j < 4; ++j) {
        if (n + j < N) value[j] = b[k * b_rs + (n + j) * b_cs];
    }
#if TO_IMAGE
    imageStore(packed_image, ivec2(t & ((1 << IMAGE_WIDTH_LOG2) - 1), t >> IMAGE_WIDTH_LOG2), value);
#else
    packed_b[i] = value;
#endif
}
