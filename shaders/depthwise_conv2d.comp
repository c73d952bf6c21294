#version 430
// Channels-last depthwise 2D convolution: output channel oc = c * MULT + m reads input channel c.
// Each invocation computes 4 consecutive output channels (one vec4 of weights per tap) for PIX
// horizontally adjacent output pixels of one row. Per kernel row it loads the SPAN input columns
// those pixels share once ((PIX - 1) * STRIDE_W + (KW - 1) * DIL_W + 1 of them, instead of
// PIX * KW): llvmpipe gathers every SSBO load lane by lane, so loads are what this kernel costs.
// Channel blocks vary fastest across invocations. Weights are packed once as
// [kh][kw][cout padded to 4] (vec4), bias as [cout padded to 4].
// TILED (GPUs: kerasgl/runtime/tuning.py depthwise_tiled): work groups that stage their input
// tile in shared memory instead, shaders/depthwise_conv2d_tiled.glsl; the same sums in the same
// order, so the same values.
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

// X_VIEW / W_VIEW (chosen per device by kerasgl/tuning.py, with VEC_IN only for X): the input /
// the weights read through rgba32f imageBuffer views of their buffers (kerasgl/buffer_views.py):
// the same values, gathered by llvmpipe where it loops over lanes for storage-buffer loads.
// X_TEXTURE (storage_ops.run_in_place): the input is a tensor stored in a texture, read in
// place (texture_operand.glsl); Y_TEXTURE: the output is written as one.
#include "texture_operand.glsl"
#ifdef X_TEXTURE
TEXTURE_OPERAND(x_texture, 0, TEXEL_FORMAT_0);
#define LOAD_X4(i) TEXEL4(x_texture, i)      // only with VEC_IN: 4 divides cin
#define LOAD_X(i) TEXEL(x_texture, i)
#elif X_VIEW
layout(rgba32f, binding = 0) readonly uniform imageBuffer x_view;
#define LOAD_X4(i) imageLoad(x_view, i)
#elif VEC_IN
layout(std430, binding = 0) readonly buffer X { vec4 x4[]; };
#define LOAD_X4(i) x4[i]
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#define LOAD_X(i) x[i]
#endif
#if W_VIEW
layout(rgba32f, binding = 1) readonly uniform imageBuffer w_view;
#define LOAD_W(i) imageLoad(w_view, i)
#else
layout(std430, binding = 1) readonly buffer W { vec4 w[]; };
#define LOAD_W(i) w[i]
#endif
layout(std430, binding = 2) readonly buffer B { vec4 bias[]; };
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
uniform int cin;
uniform int out_h;
uniform int out_w;
uniform int cout;       // cin * MULT
uniform int cblocks;    // ceil(cout / 4)
uniform int pad_top;
uniform int pad_left;

#if TILED
#include "depthwise_conv2d_tiled.glsl"
#else
uniform int row_tiles;  // ceil(out_w / PIX)
uniform uint n_work;    // batch * out_h * row_tiles * cblocks

void main() {
    uint index = linear_index();
    if (index >= n_work) return;
    int cb = int(index % uint(cblocks));
    int rest = int(index / uint(cblocks));
    int tile = rest % row_tiles;
    rest /= row_tiles;
    int oy = rest % out_h;
    int n = rest / out_h;
    int ox0 = tile * PIX;
    int oc0 = cb * 4;
    int col0 = ox0 * STRIDE_W - pad_left;
    int img_base = n * in_h * in_w * cin;
#if !VEC_IN
    // Input channel of each of the 4 output channels (clamped past the end: weights there are 0).
    ivec4 ic = min(ivec4(oc0, oc0 + 1, oc0 + 2, oc0 + 3), ivec4(cout - 1)) / MULT;
#endif

    vec4 acc[PIX];
    vec4 b = bias[cb];
    for (int p = 0; p < PIX; ++p) acc[p] = b;

    for (int kh = 0; kh < KH; ++kh) {
        int iy = oy * STRIDE_H - pad_top + kh * DIL_H;
        if (iy < 0 || iy >= in_h) {
            // A padded row: zeros that still multiply its weights, as in Keras (0 * inf = NaN).
            // The zero is computed (it is 0.0 here): the GLSL compiler folds w * 0.0 to 0.
            float zero = float(iy >= 0 && iy < in_h);
            for (int kw = 0; kw < KW; ++kw) {
                vec4 zero_tap = LOAD_W((kh * KW + kw) * cblocks + cb) * zero;
                for (int p = 0; p < PIX; ++p) acc[p] += zero_tap;
            }
            continue;
        }
        int row = img_base + iy * in_w * cin;
        vec4 xs[SPAN];
        for (int j = 0; j < SPAN; ++j) {
            int ix = col0 + j;
            bool ok = ix >= 0 && ix < in_w;
            int at = ok ? row + ix * cin : 0;
#if VEC_IN
            vec4 value = LOAD_X4((at >> 2) + cb);
#else
            vec4 value = vec4(LOAD_X(at + ic.x), LOAD_X(at + ic.y), LOAD_X(at + ic.z), LOAD_X(at + ic.w));
#endif
            xs[j] = ok ? value : vec4(0.0);
        }
        for (int kw = 0; kw < KW; ++kw) {
            vec4 wv = LOAD_W((kh * KW + kw) * cblocks + cb);
            for (int p = 0; p < PIX; ++p) acc[p] += wv * xs[p * STRIDE_W + kw * DIL_W];
        }
    }

    for (int p = 0; p < PIX; ++p) {
        if (ox0 + p >= out_w) break;
        int out_base = ((n * out_h + oy) * out_w + ox0 + p) * cout + oc0;
#if VEC_OUT
        // cout % 4 == 0: the whole vec4 is in range. One vec4 store costs llvmpipe about what
        // one scalar store does.
        vec4 a = acc[p];
        STORE_Y4(out_base >> 2, vec4(ACT(a.x), ACT(a.y), ACT(a.z), ACT(a.w)));
#else
        for (int j = 0; j < 4; ++j) {
            if (oc0 + j < cout) STORE_Y(out_base + j, ACT(acc[p][j]));
        }
#endif
    }
}
#endif
