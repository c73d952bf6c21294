#version 430
// C[b] = ACT(A[b] @ B[b] + bias) as matmul.comp computes it, as a tiled GEMM for GPUs
// (gemm_tile.glsl: shared-memory tiles of A and B, register blocking, vec4 loads); one work
// group per TILE_M x TILE_N tile of C, work groups along z per matrix of the batch. Chosen by
// kerasgl/ops/matmul.py where the device's tuning says so (runtime/tuning.py matmul_tiled) and
// the layout allows: A contiguous along k, K and N multiples of 4, no softmax epilogue.
//
// Defines: the tile shape (TILE_M, TILE_N, TILE_K, BLOCK_M, BLOCK_N: kerasgl/ops/gemm_tiles.py),
//   A_VIEW / B_VIEW   A / B read through rgba32f imageBuffer views of their buffers
//   B_ALONG_K         B is read transposed (matmul's transpose_b: b_rs == 1, contiguous along k)
//   WEIGHTS_F16       B is float16 weights, unpacked to float32 as read (half_weights.glsl)
//   HAS_BIAS, ACT, BROADCAST as in matmul.comp.
//   A_TEXTURE, B_TEXTURE, BIAS_TEXTURE, C_TEXTURE   tensors stored in textures, read (written)
//                     in place as in matmul.comp (texture_operand.glsl; all of them vec4s here)
#include "common.glsl"
#include "activations.glsl"
#include "matmul_common.glsl"
#include "texture_operand.glsl"

#ifdef A_TEXTURE
TEXTURE_OPERAND(a_texture, 0, TEXEL_FORMAT_0);
#define A4(i) TEXEL4(a_texture, i)
#elif A_VIEW
layout(rgba32f, binding = 0) readonly uniform imageBuffer a_view;
#define A4(i) imageLoad(a_view, i)
#else
layout(std430, binding = 0) readonly buffer A { vec4 a4[]; };
#define A4(i) a4[i]
#endif
#ifdef B_TEXTURE
TEXTURE_OPERAND(b_texture, 1, TEXEL_FORMAT_1);     // a float32 activation in a texture, read in place
#define B4(i) TEXEL4(b_texture, i)
#else
// B through half_weights.glsl: float32, or float16 weights (WEIGHTS_F16) unpacked as read.
#define W_BINDING 1
#define W_IMAGE B_VIEW
#define W_VEC4 1
#include "half_weights.glsl"
#define B4(i) load_w4(i)
#endif
#if !HAS_BIAS
#elif defined(BIAS_TEXTURE)
TEXTURE_OPERAND(bias_texture, 2, TEXEL_FORMAT_2);
#define BIAS4(i) TEXEL4(bias_texture, i)
#else
layout(std430, binding = 2) readonly buffer Bias { vec4 bias4[]; };
#define BIAS4(i) bias4[i]
#endif
#ifdef C_TEXTURE
TEXTURE_RESULT(c_texture, 3, TEXEL_FORMAT_3);
#define STORE_C4(i, v) STORE_TEXEL4(c_texture, i, v)
#else
layout(std430, binding = 3) writeonly buffer C { vec4 c4[]; };
#define STORE_C4(i, v) c4[i] = (v)
#endif

int a_base, b_base, c_base;     // this work group's matrices (set in main)

vec4 gemm_load_a(int m, int k) { return A4((a_base + m * a_rs + k) >> 2); }

#if B_ALONG_K
vec4 gemm_load_b(int k, int n) { return B4((b_base + n * b_cs + k) >> 2); }
#else
vec4 gemm_load_b(int k, int n) { return B4((b_base + k * b_rs + n) >> 2); }
#endif

void gemm_store(int m, int n, vec4 v) {
#if HAS_BIAS
    v += BIAS4(n >> 2);
#endif
    STORE_C4((c_base + m * c_rs + n) >> 2, act4(v));
}

#include "gemm_tile.glsl"

void main() {
    int batch = int(gl_WorkGroupID.z) + batch_base;
    ivec2 bases = batch_bases(batch);
    a_base = bases.x;
    b_base = bases.y;
    c_base = batch * M * c_rs + c_off;
    gemm_tile(M, N, K, int(gl_WorkGroupID.y) * TILE_M, int(gl_WorkGroupID.x) * TILE_N);
}
