#version 430
// Channels-last 2D convolution of one group (Conv1D runs as a 1-row Conv2D) as an implicit GEMM
// on the tiled GEMM of gemm_tile.glsl, for GPUs: C[pixel][cout] = A[pixel][tap, cin] @ W, where
// A's row for an output pixel is the input under its kernel window (im2col), never stored: each
// vec4 of A is read from the input where it lies (zeros in the padding). K = kh * kw * cin, in
// the order of the weights, cin fastest: a vec4 of A (cin % 4 == 0) is 4 channels of one tap.
// POINTWISE (1x1, stride 1, no padding): A is the input itself, [pixels][cin].
//
// The weights are the convolution's packed in matrix layout (kerasgl/ops/conv.py pack_conv
// with the device's conv_gemm tuning): [kh][kw][cin][columns] vec4 rows of w_row vec4s, this
// dispatch's piece of output channels [n_first, n_first + N) starting at column 0 of its
// buffer (one piece unless the weights exceed a storage block). Chosen by kerasgl/ops/conv.py;
// conv2d.comp does what this kernel does not (groups, transposed, fused pooling, cin % 4 != 0).
//
// The epilogue is conv2d.comp's: the bias after the sum, a residual added (RESIDUAL, R_VIEW),
// then the activation (ACT, or ACT_CLAMP's bounds).
#include "common.glsl"
#include "activations.glsl"
#if ACT_CLAMP
uniform float act_lo;
uniform float act_hi;
// min/max: a NaN becomes a bound here (GLSL's min/max drop it; see docs/limitations.md).
float act_clamp(float v) { return min(max(v, act_lo), act_hi); }
#endif

// X_TEXTURE / R_TEXTURE (storage_ops.run_in_place): the input / the residual is a tensor stored
// in a texture, read in place (texture_operand.glsl; the residual at image unit 4, its binding);
// Y_TEXTURE: the output is written as one.
#include "texture_operand.glsl"
#ifdef X_TEXTURE
TEXTURE_OPERAND(x_texture, 0, TEXEL_FORMAT_0);
#define LOAD_X4(i) TEXEL4(x_texture, i)      // cin % 4 == 0 here: 4 divides the size
#elif X_VIEW
layout(rgba32f, binding = 0) readonly uniform imageBuffer x_view;
#define LOAD_X4(i) imageLoad(x_view, i)
#else
layout(std430, binding = 0) readonly buffer X { vec4 x4[]; };
#define LOAD_X4(i) x4[i]
#endif
// The weights through half_weights.glsl: float32, or float16 (WEIGHTS_F16: load_model's
// storage_dtype) unpacked to float32 as read, from an rg32ui view with W_VIEW.
#define W_BINDING 1
#define W_IMAGE W_VIEW
#define W_VEC4 1
#include "half_weights.glsl"
#define LOAD_W(i) load_w4(i)
layout(std430, binding = 2) readonly buffer B { vec4 bias[]; };
#ifdef Y_TEXTURE
TEXTURE_RESULT(y_texture, 3, TEXEL_FORMAT_3);
#define STORE_Y4(i, v) STORE_TEXEL4(y_texture, i, v)
#else
layout(std430, binding = 3) writeonly buffer Y { vec4 y4[]; };
#define STORE_Y4(i, v) y4[i] = (v)
#endif
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

uniform int in_h;
uniform int in_w;
uniform int cin;
uniform int out_h;
uniform int out_w;
uniform int cout;        // channels of the whole output (a row of C in memory)
uniform int kernel_w;
uniform int stride_h;
uniform int stride_w;
uniform int dil_h;
uniform int dil_w;
uniform int pad_top;
uniform int pad_left;
uniform int n_pixels;    // M: batch * out_h * out_w
uniform int n_columns;   // N: this piece's output channels
uniform int n_first;     // its first output channel
uniform int k_total;     // K: kh * kw * cin
uniform int w_row;       // vec4s per row of the weights' matrix

vec4 gemm_load_a(int m, int k) {
#if POINTWISE
    return LOAD_X4((m * cin + k) >> 2);
#else
    // Which output pixel (m) and which tap and channel (k) this vec4 of A is.
    int ox = m % out_w;
    int rest = m / out_w;
    int oy = rest % out_h;
    int n = rest / out_h;
    int tap = k / cin;
    int c = k - tap * cin;
    int iy = oy * stride_h - pad_top + (tap / kernel_w) * dil_h;
    int ix = ox * stride_w - pad_left + (tap % kernel_w) * dil_w;
    if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) return vec4(0.0);
    return LOAD_X4((((n * in_h + iy) * in_w + ix) * cin + c) >> 2);
#endif
}

vec4 gemm_load_b(int k, int n) { return LOAD_W(k * w_row + (n >> 2)); }

void gemm_store(int m, int n, vec4 v) {
    int at = (m * cout + n_first + n) >> 2;
    v += bias[n >> 2];
#if RESIDUAL
    v += LOAD_R4(at);
#endif
    STORE_Y4(at, vec4(ACT(v.x), ACT(v.y), ACT(v.z), ACT(v.w)));
}

#include "gemm_tile.glsl"

void main() {
    gemm_tile(n_pixels, n_columns, k_total, int(gl_WorkGroupID.y) * TILE_M,
              int(gl_WorkGroupID.x) * TILE_N);
}
