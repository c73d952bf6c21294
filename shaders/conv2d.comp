#version 430
// Channels-last 2D convolution (Conv1D runs as a 1-row Conv2D) as an implicit GEMM.
//
// Each invocation computes PIX output pixels x (4 * COUT_VEC) output channels of one group, so every
// input value it loads feeds 4 * COUT_VEC multiply-adds and every weight vec4 feeds PIX pixels.
// llvmpipe gathers SSBO loads lane by lane (loads inside loops get no uniform fast path), so loads,
// not arithmetic, bound this kernel: large tiles are what makes it fast. Output-channel blocks vary
// fastest across invocations, so neighbouring lanes read the same input pixels (cache-friendly)
// and small images with many channels still fill the SIMD lanes.
//
// Weights are packed once at load (kerasgl/ops/conv.py pack_conv) as
//   [group][cout block][kh][kw][cin of group][COUT_VEC] vec4, each vec4 = 4 consecutive couts,
// zero-filled past the group's last output channel. They are addressed through two strides (in
// vec4s), so that a plain row-major [K][N] matrix is a 1x1 kernel too (a matmul run here reads
// its B without packing it): w_block between output-channel blocks, w_row between consecutive
// input channels (COUT_VEC when packed, N/4 for a matrix); the taps follow each other.
// A kernel larger than one storage block is split into pieces of whole output-channel blocks
// (kerasgl/ops/splits.py), each in its own buffer and run as its own dispatch: block_base is the
// first block of this dispatch's piece, whose weights and bias are addressed from its own start.
// INPUT_DIL_H / INPUT_DIL_W > 1 turn this into a transposed convolution: the input is seen with
// INPUT_DIL - 1 zeros between its samples along that axis (only the real samples are read).
// POOL > 1: a MaxPooling2D (POOL x POOL, stride POOL, valid) of the activated output, written
// instead of it (fused at load: kerasgl/fusion.py; the activation must be monotone).
#include "common.glsl"
#include "activations.glsl"
#if ACT_CLAMP
// linear / relu / relu6 / ReLU(max_value) as one variant, bounds from uniforms (see clamp_bounds
// in kerasgl/ops/conv.py): fewer variants to JIT-compile on a cold start.
uniform float act_lo;
uniform float act_hi;
// min/max: a NaN becomes a bound here (GLSL's min/max drop it; see docs/limitations.md).
float act_clamp(float v) { return min(max(v, act_lo), act_hi); }
#endif
layout(local_size_x = LOCAL_SIZE) in;

// X_VIEW / W_VIEW (chosen per device by kerasgl/tuning.py): the input / the weights are read
// through rgba32f imageBuffer views of their buffers (kerasgl/buffer_views.py), texel i = vec4 i.
// Same memory, same values, same order of sums; on llvmpipe an image load is one gather per lane
// where a storage-buffer load is a bounds-checked loop over lanes and components (about 2x faster).
// X_TEXTURE / R_TEXTURE (storage_ops.run_in_place): the input / the residual is a tensor stored
// in a texture, read in place (texture_operand.glsl; the residual at image unit 4, its binding);
// Y_TEXTURE: the output is written as one. An input texture is read like a buffer (clamped
// address, value masked outside the input), so no X_VIEW: the same values either way.
#include "texture_operand.glsl"
#ifdef X_TEXTURE
TEXTURE_OPERAND(x_texture, 0, TEXEL_FORMAT_0);
#define LOAD_X4(i) TEXEL4(x_texture, i)      // only with CIN_VEC4: 4 divides cin
#define LOAD_X(i) TEXEL(x_texture, i)
#elif X_VIEW && CIN_VEC4
layout(rgba32f, binding = 0) readonly uniform imageBuffer x_view;
#define LOAD_X4(i) imageLoad(x_view, i)
#elif X_VIEW
layout(r32f, binding = 0) readonly uniform imageBuffer x_view;   // a float per texel
#define LOAD_X(i) imageLoad(x_view, i).x
#elif CIN_VEC4
layout(std430, binding = 0) readonly buffer X { vec4 x4[]; };
#define LOAD_X4(i) x4[i]
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#define LOAD_X(i) x[i]
#endif
// The weights through half_weights.glsl: float32, or float16 (WEIGHTS_F16: load_model's
// storage_dtype) unpacked to float32 as read, from an rg32ui view with W_VIEW.
#define W_BINDING 1
#define W_IMAGE W_VIEW
#define W_VEC4 1
#include "half_weights.glsl"
#define LOAD_W(i) load_w4(i)
layout(std430, binding = 2) readonly buffer B { vec4 bias[]; };
// RESIDUAL: a tensor of the output's layout added before the activation (a residual connection's
// Add, fused at load: kerasgl/fusion.py); read through a view (R_VIEW) like the input.
#ifdef R_TEXTURE
TEXTURE_OPERAND(r_texture, 4, TEXEL_FORMAT_4);
#define LOAD_R4(i) TEXEL4(r_texture, i)
#elif R_VIEW
layout(rgba32f, binding = 2) readonly uniform imageBuffer r_view;
#define LOAD_R4(i) imageLoad(r_view, i)
#elif RESIDUAL
layout(std430, binding = 4) readonly buffer R { vec4 r4[]; };
#define LOAD_R4(i) r4[i]
#endif
#ifdef Y_TEXTURE
TEXTURE_RESULT(y_texture, 3, TEXEL_FORMAT_3);
#define STORE_Y4(i, v) STORE_TEXEL4(y_texture, i, v)
#define STORE_Y(i, v) STORE_TEXEL(y_texture, i, v)
#elif VEC_OUT
layout(std430, binding = 3) writeonly buffer Y { vec4 y4[]; };
#define STORE_Y4(i, v) y4[i] = (v)
#else
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
#define STORE_Y(i, v) y[i] = (v)
#endif

uniform int in_h;
uniform int in_w;
uniform int cin;        // channels of the whole input
uniform int out_h;
uniform int out_w;
uniform int cout;       // channels of the whole output
uniform int cin_pg;     // input channels per group
uniform int cout_pg;    // output channels per group
uniform int blocks_pg;  // output-channel blocks (of 4 * COUT_VEC) per group
uniform int pad_top;
// Kernel size, strides and dilation are uniforms, not defines: they only change addresses and
// loop counts, and each define combination is a variant llvmpipe JIT-compiles at its first
// dispatch (~2 s for the large tiles on 2 cores); as uniforms 1x1, 3x3, strided and dilated
// convolutions of one tile shape share a program, at no measured cost in speed.
uniform int kernel_h;
uniform int kernel_w;
uniform int stride_h;
uniform int stride_w;
uniform int dil_h;
uniform int dil_w;
uniform int pad_left;
uniform int w_block;    // vec4s between the weights of consecutive output-channel blocks
uniform int w_row;      // vec4s between the weights of consecutive input channels
uniform uint n_pixels;  // batch * out_h * out_w (* POOL^2: the pixels computed)
uniform uint n_blocks;  // blocks this dispatch computes (groups * blocks_pg: unsplit weights)
uniform int block_base; // the first of them, over all groups' blocks (0: unsplit weights)
uniform uint n_work;    // ceil(n_pixels / PIX) * n_blocks

// Far below 0, so that base + channel stays negative: an invalid texel for any input.
#define OUTSIDE (-0x40000000)

void main() {
    uint work = linear_index();
    if (work >= n_work) return;
    int piece_block = int(work % n_blocks);   // in this dispatch's piece of the weights
    int block = block_base + piece_block;     // in the whole kernel
    uint first = (work / n_blocks) * uint(PIX);
    int group = block / blocks_pg;
    int cout_in_group = (block - group * blocks_pg) * (4 * COUT_VEC);

    // Where each of this invocation's pixels sits: the first by division, the next ones by
    // stepping along the row (integer division has no SIMD form on CPUs: llvmpipe divides lane by
    // lane, and 4 divisions per pixel cost as much as the sums of a 1x1 convolution over 64
    // channels). With POOL > 1 a pixel is pooled pixel * POOL^2 + cell of its window: a tile holds
    // whole windows (PIX is a multiple of POOL^2), and out_h / out_w are the pooled output's.
    // Pixels past the last (not live) get coordinates past the input: never loaded nor written.
    int row0[PIX];      // first input row touched (may be negative: padding)
    int col0[PIX];
    int img_base[PIX];  // offset of image n in the input, in elements
    bool live[PIX];
    int ox = int((first / uint(POOL * POOL)) % uint(out_w));
    int rest = int((first / uint(POOL * POOL)) / uint(out_w));
    int oy = rest % out_h;
    int n = rest / out_h;
    for (int p = 0; p < PIX; ++p) {
        live[p] = first + uint(p) < n_pixels;
#if POOL > 1
        int cell = p % (POOL * POOL);
        row0[p] = (oy * POOL + cell / POOL) * stride_h - pad_top;
        col0[p] = (ox * POOL + cell % POOL) * stride_w - pad_left;
#else
        int cell = 0;
        row0[p] = oy * stride_h - pad_top;
        col0[p] = ox * stride_w - pad_left;
#endif
        img_base[p] = n * in_h * in_w * cin + group * cin_pg;
        if (cell == POOL * POOL - 1 && ++ox == out_w) {
            ox = 0;
            if (++oy == out_h) {
                oy = 0;
                ++n;
            }
        }
    }

    // The bias is added after the sum, not taken as its start: a folded BatchNormalization's
    // bias (beta - mean * scale) can be large against the result, and the partial sums then carry
    // its rounding through every step (EfficientNetB0's logits: 1.6x further from float64 than
    // with the bias last, which is as accurate as the unfused convolution then BN).
    vec4 acc[PIX][COUT_VEC];
    for (int v = 0; v < COUT_VEC; ++v) {
        for (int p = 0; p < PIX; ++p) acc[p][v] = vec4(0.0);
    }

    int wi = piece_block * w_block;
    for (int kh = 0; kh < kernel_h; ++kh) {
        for (int kw = 0; kw < kernel_w; ++kw) {
            int base[PIX];
            bool ok[PIX];
            for (int p = 0; p < PIX; ++p) {
                int iy = row0[p] + kh * dil_h;
                int ix = col0[p] + kw * dil_w;
#if INPUT_DIL_H > 1 || INPUT_DIL_W > 1
                bool on_sample = iy >= 0 && ix >= 0 && iy % INPUT_DIL_H == 0 && ix % INPUT_DIL_W == 0;
                iy /= INPUT_DIL_H;
                ix /= INPUT_DIL_W;
#else
                bool on_sample = true;
#endif
                ok[p] = live[p] && on_sample && iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
                // A clamped, always-valid address: the loaded value is discarded when !ok.
#if X_VIEW
                // Outside the input: an address no image load reaches (GL returns 0 for a texel
                // outside the image), so the loaded value needs no masking.
                base[p] = ok[p] ? img_base[p] + (iy * in_w + ix) * cin : OUTSIDE;
#else
                base[p] = ok[p] ? img_base[p] + (iy * in_w + ix) * cin : 0;
#endif
            }
#if CIN_VEC4
            for (int c = 0; c < cin_pg; c += 4) {
                vec4 xv[PIX];
                for (int p = 0; p < PIX; ++p) {
                    vec4 value = LOAD_X4((base[p] + c) >> 2);
#if X_VIEW
                    xv[p] = value;
#else
                    xv[p] = ok[p] ? value : vec4(0.0);
#endif
                }
                for (int v = 0; v < COUT_VEC; ++v) {
                    mat4 m = mat4(LOAD_W(wi + v), LOAD_W(wi + w_row + v),
                                  LOAD_W(wi + 2 * w_row + v), LOAD_W(wi + 3 * w_row + v));
                    for (int p = 0; p < PIX; ++p) acc[p][v] += m * xv[p];
                }
                wi += 4 * w_row;
            }
#else
            for (int c = 0; c < cin_pg; ++c) {
                float xs[PIX];
                for (int p = 0; p < PIX; ++p) {
                    float value = LOAD_X(base[p] + c);
#if X_VIEW
                    xs[p] = value;
#else
                    xs[p] = ok[p] ? value : 0.0;
#endif
                }
                for (int v = 0; v < COUT_VEC; ++v) {
                    vec4 wv = LOAD_W(wi + v);
                    for (int p = 0; p < PIX; ++p) acc[p][v] += wv * xs[p];
                }
                wi += w_row;
            }
#endif
        }
    }

#if POOL > 1
    // Max pooling (POOL x POOL windows, stride POOL) of the pixels computed above: the max of
    // each window's accumulators, then the activation (monotone: max and ACT commute exactly).
    // GLSL's max may drop a NaN, where Keras's max pooling keeps it; any test that would keep it
    // (isnan, compares, bit tricks: per value or per window) made llvmpipe JIT-compile this
    // unrolled kernel for one to three minutes instead of 0.4 s (measured on a small CNN's conv
    // layers), so the fused kernel pools as GLSL does: see docs/limitations.md.
    for (int p = 0; p < PIX; p += POOL * POOL) {
        for (int c = 1; c < POOL * POOL; ++c)
            for (int v = 0; v < COUT_VEC; ++v) acc[p][v] = max(acc[p][v], acc[p + c][v]);
    }
    for (int p = 0; p < PIX; p += POOL * POOL) {
        if (!live[p]) continue;
        int out_base = int((first + uint(p)) / uint(POOL * POOL)) * cout + group * cout_pg
                       + cout_in_group;
#else
    for (int p = 0; p < PIX; ++p) {
        if (!live[p]) continue;
        int out_base = int(first + uint(p)) * cout + group * cout_pg + cout_in_group;
#endif
        for (int v = 0; v < COUT_VEC; ++v) {
#if VEC_OUT
            // cout_pg % 4 == 0: a vec4 of channels is either all in the group or all past it.
            vec4 a = acc[p][v] + bias[piece_block * COUT_VEC + v];
            if (cout_in_group + 4 * v < cout_pg) {
#if RESIDUAL
                a += LOAD_R4((out_base >> 2) + v);
#endif
                STORE_Y4((out_base >> 2) + v, vec4(ACT(a.x), ACT(a.y), ACT(a.z), ACT(a.w)));
            }
#else
            for (int j = 0; j < 4; ++j) {
                int oc = cout_in_group + 4 * v + j;
                if (oc < cout_pg) STORE_Y(out_base + 4 * v + j, ACT(acc[p][v][j] + bias[piece_block * COUT_VEC + v][j]));
            }
#endif
        }
    }
}
