#version 430
// C[b] = ACT(A[b] @ B[b] + bias), batched, with numpy broadcasting of the batch dimensions.
//
// Each invocation computes a TM x 4*NV block of C (TM rows, NV vec4s of 4 columns), so every
// value loaded from A and B is used 4 (resp. TM) times. Lanes of a work group run along N, so on
// llvmpipe (which runs the lanes of a group as SIMD) the loads of B are contiguous across lanes
// and the loads of A are the same address for every lane.
//
// A and B are read through strides, so a transposed operand costs nothing:
//   A[b, m, k] = a[a_batch_offset(b) + m * a_rs + k * a_cs]   (likewise B with b_rs, b_cs)
// Defines (options and layouts, chosen by kerasgl/ops/matmul.py):
//   TM          rows per invocation
//   NV          vec4 column groups per invocation (4*NV columns)
//   A_VEC4      A is contiguous along k (a_cs == 1), K % 4 == 0, all offsets multiples of 4
//   B_VEC4      B is contiguous along n (b_cs == 1), N % 4 == 0, all offsets multiples of 4
//   A_VIEW      (with A_VEC4) A read through an rgba32f imageBuffer view of its buffer
//   B_VIEW      (with B_VEC4) likewise B: same values, but llvmpipe gathers image loads where it
//               loops over lanes for storage-buffer loads (kerasgl/buffer_views.py)
//   WEIGHTS_F16 B is float16 weights (load_model's storage_dtype), unpacked to float32 as read
//               (half_weights.glsl; an rg32ui view with B_VIEW)
//   C_VEC4      N, c_rs and c_off % 4 == 0: C rows are written as vec4
//   HAS_BIAS    add bias[n] (BIAS_VEC4 when N % 4 == 0)
//   ACT         pointwise activation from activations.glsl, applied last
//   SOFTMAX     softmax over each row instead (N <= 4 * NV: one invocation holds a whole row)
//   BROADCAST   batch offsets come from the broadcast strides (matmul_common.glsl)
//   LX, LY      work group size (lanes along N blocks, lanes along M blocks)
//   A_TEXTURE, B_TEXTURE, BIAS_TEXTURE   (set by storage_ops.run_in_place) that operand is a
//               tensor stored in a texture, read in place as an image at the unit numbered like
//               its binding (texture_operand.glsl); B then is float32 (an activation, not weights)
//   C_TEXTURE   C is written as a texture (every operand was one)
#include "common.glsl"
#include "activations.glsl"
#include "matmul_common.glsl"
#include "texture_operand.glsl"

layout(local_size_x = LX, local_size_y = LY) in;

#ifdef A_TEXTURE
TEXTURE_OPERAND(a_texture, 0, TEXEL_FORMAT_0);
#define A4(i) TEXEL4(a_texture, i)
#define A1(i) TEXEL(a_texture, i)
#elif A_VIEW
layout(rgba32f, binding = 0) readonly uniform imageBuffer a_view;
#define A4(i) imageLoad(a_view, i)
#elif A_VEC4
layout(std430, binding = 0) readonly buffer A { vec4 a4[]; };
#define A4(i) a4[i]
#else
layout(std430, binding = 0) readonly buffer A { float a[]; };
#define A1(i) a[i]
#endif
#ifdef B_TEXTURE
// B a float32 tensor in a texture (a product of two activations): read in place.
TEXTURE_OPERAND(b_texture, 1, TEXEL_FORMAT_1);
vec4 load_w4(int i) { return TEXEL4(b_texture, i); }   // only with B_VEC4: 4 divides its size
float load_w(int i) { return TEXEL(b_texture, i); }
#else
// B through half_weights.glsl: float32, or float16 weights (WEIGHTS_F16) unpacked as read.
#define W_BINDING 1
#define W_IMAGE B_VIEW
#define W_VEC4 B_VEC4
#include "half_weights.glsl"
#endif
#if !HAS_BIAS
#elif defined(BIAS_TEXTURE)
TEXTURE_OPERAND(bias_texture, 2, TEXEL_FORMAT_2);
#define BIAS4(i) TEXEL4(bias_texture, i)
#define BIAS1(i) TEXEL(bias_texture, i)
#elif BIAS_VEC4
layout(std430, binding = 2) readonly buffer Bias { vec4 bias4[]; };
#define BIAS4(i) bias4[i]
#else
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
#define BIAS1(i) bias[i]
#endif
#ifdef C_TEXTURE
TEXTURE_RESULT(c_texture, 3, TEXEL_FORMAT_3);
#define STORE_C4(i, v) STORE_TEXEL4(c_texture, i, v)
#define STORE_C(i, v) STORE_TEXEL(c_texture, i, v)
#elif C_VEC4
layout(std430, binding = 3) writeonly buffer C { vec4 c4[]; };
#define STORE_C4(i, v) c4[i] = (v)
#else
layout(std430, binding = 3) writeonly buffer C { float c[]; };
#define STORE_C(i, v) c[i] = (v)
#endif

vec4 load_a_row(int base, int m, int k) {
    // A[m, k..k+3]
#if A_VEC4
    return A4((base + m * a_rs + k) >> 2);
#else
    int i = base + m * a_rs + k * a_cs;
    return vec4(A1(i), A1(i + a_cs), A1(i + 2 * a_cs), A1(i + 3 * a_cs));
#endif
}

float load_a(int base, int m, int k) {
#if A_VEC4
    int i = base + m * a_rs + k;
    return A4(i >> 2)[i & 3];
#else
    return A1(base + m * a_rs + k * a_cs);
#endif
}

vec4 load_b_row(int base, int k, int n) {
    // B[k, n..n+3]; columns past N read as 0 (only possible without B_VEC4).
#if B_VEC4
    return load_w4((base + k * b_rs + n) >> 2);
#else
    int i = base + k * b_rs + n * b_cs;
    vec4 v = vec4(0.0);
    v.x = load_w(i);
    if (n + 1 < N) v.y = load_w(i + b_cs);
    if (n + 2 < N) v.z = load_w(i + 2 * b_cs);
    if (n + 3 < N) v.w = load_w(i + 3 * b_cs);
    return v;
#endif
}

#if HAS_BIAS
vec4 bias_at(int n) {
    // bias[n..n+3]; past N: 0.
#if BIAS_VEC4
    return BIAS4(n >> 2);
#else
    return vec4(BIAS1(n), n + 1 < N ? BIAS1(n + 1) : 0.0, n + 2 < N ? BIAS1(n + 2) : 0.0,
                n + 3 < N ? BIAS1(n + 3) : 0.0);
#endif
}
#endif

void main() {
    int n0 = int(gl_GlobalInvocationID.x) * 4 * NV;
    int m0 = int(gl_GlobalInvocationID.y) * TM;
    int batch = int(gl_WorkGroupID.z) + batch_base;
    if (n0 >= N || m0 >= M) return;

    ivec2 bases = batch_bases(batch);
    int a_base = bases.x, b_base = bases.y;

    // Rows past M repeat the last row (their results are not written): no branch in the loop.
    int rows[TM];
    for (int r = 0; r < TM; ++r) rows[r] = min(m0 + r, M - 1);

    vec4 acc[TM * NV];
    for (int r = 0; r < TM * NV; ++r) acc[r] = vec4(0.0);

    int k = 0;
    int k4 = K & ~3;
    for (; k < k4; k += 4) {
        vec4 bv[4 * NV];
        for (int j = 0; j < NV; ++j) {
            bv[4 * j] = load_b_row(b_base, k, n0 + 4 * j);
            bv[4 * j + 1] = load_b_row(b_base, k + 1, n0 + 4 * j);
            bv[4 * j + 2] = load_b_row(b_base, k + 2, n0 + 4 * j);
            bv[4 * j + 3] = load_b_row(b_base, k + 3, n0 + 4 * j);
        }
        for (int r = 0; r < TM; ++r) {
            vec4 av = load_a_row(a_base, rows[r], k);
            for (int j = 0; j < NV; ++j)
                acc[r * NV + j] += av.x * bv[4 * j] + av.y * bv[4 * j + 1] + av.z * bv[4 * j + 2]
                                   + av.w * bv[4 * j + 3];
        }
    }
    for (; k < K; ++k) {
        for (int r = 0; r < TM; ++r) {
            float av = load_a(a_base, rows[r], k);
            for (int j = 0; j < NV; ++j) acc[r * NV + j] += av * load_b_row(b_base, k, n0 + 4 * j);
        }
    }

#if SOFTMAX
    // The whole row is this invocation's (4 * NV >= N, n0 == 0): softmax over it in registers,
    // as jax.nn.softmax computes it: exp(x - max(x)) / sum(exp(x - max(x))).
    for (int r = 0; r < TM; ++r) {
        float top = uintBitsToFloat(0xff800000u);   // -inf
        for (int j = 0; j < NV; ++j) {
#if HAS_BIAS
            acc[r * NV + j] += bias_at(4 * j);
#endif
            for (int q = 0; q < 4; ++q)
                if (4 * j + q < N) top = max(top, acc[r * NV + j][q]);
        }
        float sum = 0.0;
        for (int j = 0; j < NV; ++j) {
            for (int q = 0; q < 4; ++q) {
                float e = 4 * j + q < N ? exp(acc[r * NV + j][q] - top) : 0.0;
                acc[r * NV + j][q] = e;
                sum += e;
            }
        }
        for (int j = 0; j < NV; ++j) acc[r * NV + j] /= sum;
    }
#endif

    int c_base = batch * M * c_rs + c_off;
    for (int j = 0; j < NV; ++j) {
        int n = n0 + 4 * j;
        if (n >= N) break;
#if HAS_BIAS && !SOFTMAX
        vec4 bias_v = bias_at(n);
#endif
        for (int r = 0; r < TM; ++r) {
            int m = m0 + r;
            if (m >= M) break;
            vec4 v = acc[r * NV + j];
#if HAS_BIAS && !SOFTMAX
            v += bias_v;
#endif
            v = act4(v);
#if C_VEC4
            STORE_C4((c_base + m * c_rs + n) >> 2, v);
#else
            int i = c_base + m * c_rs + n;
            STORE_C(i, v.x);
            if (n + 1 < N) STORE_C(i + 1, v.y);
            if (n + 2 < N) STORE_C(i + 2, v.z);
            if (n + 3 < N) STORE_C(i + 3, v.w);
#endif
        }
    }
}
