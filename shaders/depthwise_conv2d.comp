#version 430
// Channels-last depthwise 2D convolution: output channel oc = c * MULT + m reads input channel c.
// Each invocation computes 4 consecutive output channels (one vec4 of weights per tap) for PIX
// consecutive output pixels, so each weight load serves PIX pixels. Channel blocks vary fastest
// across invocations. Weights are packed once as [kh][kw][cout padded to 4] (vec4), bias as
// [cout padded to 4].
#include "common.glsl"
#include "activations.glsl"
layout(local_size_x = LOCAL_SIZE) in;

#if VEC_IN
layout(std430, binding = 0) readonly buffer X { vec4 x4[]; };
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#endif
layout(std430, binding = 1) readonly buffer W { vec4 w[]; };
layout(std430, binding = 2) readonly buffer B { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

uniform int in_h;
uniform int in_w;
uniform int cin;
uniform int out_h;
uniform int out_w;
uniform int cout;       // cin * MULT
uniform int cblocks;    // ceil(cout / 4)
uniform int pad_top;
uniform int pad_left;
uniform uint n_pixels;
uniform uint n_work;    // ceil(n_pixels / PIX) * cblocks

void main() {
    uint index = linear_index();
    if (index >= n_work) return;
    int cb = int(index % uint(cblocks));
    uint first = (index / uint(cblocks)) * uint(PIX);
    int oc0 = cb * 4;

    int row0[PIX];
    int col0[PIX];
    int img_base[PIX];
    bool live[PIX];
    vec4 acc[PIX];
    vec4 b = bias[cb];
    for (int p = 0; p < PIX; ++p) {
        uint pixel = first + uint(p);
        live[p] = pixel < n_pixels;
        int at = int(live[p] ? pixel : first);
        int ox = at % out_w;
        int rest = at / out_w;
        int oy = rest % out_h;
        int n = rest / out_h;
        row0[p] = oy * STRIDE_H - pad_top;
        col0[p] = ox * STRIDE_W - pad_left;
        img_base[p] = n * in_h * in_w * cin;
        acc[p] = b;
    }
#if !VEC_IN
    // Input channel of each of the 4 output channels (clamped past the end: weights there are 0).
    ivec4 ic = min(ivec4(oc0, oc0 + 1, oc0 + 2, oc0 + 3), ivec4(cout - 1)) / MULT;
#endif

    int wi = cb;
    for (int kh = 0; kh < KH; ++kh) {
        for (int kw = 0; kw < KW; ++kw) {
            vec4 wv = w[wi];
            wi += cblocks;
            for (int p = 0; p < PIX; ++p) {
                int iy = row0[p] + kh * DIL_H;
                int ix = col0[p] + kw * DIL_W;
                bool ok = live[p] && iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
                int base = ok ? img_base[p] + (iy * in_w + ix) * cin : 0;
#if VEC_IN
                vec4 xv = x4[(base >> 2) + cb];
#else
                vec4 xv = vec4(x[base + ic.x], x[base + ic.y], x[base + ic.z], x[base + ic.w]);
#endif
                acc[p] += ok ? wv * xv : vec4(0.0);
            }
        }
    }

    for (int p = 0; p < PIX; ++p) {
        if (!live[p]) continue;
        int out_base = int(first + uint(p)) * cout + oc0;
#if VEC_OUT
        // cout % 4 == 0: the whole vec4 is in range.
        y[out_base] = ACT(acc[p].x);
        y[out_base + 1] = ACT(acc[p].y);
        y[out_base + 2] = ACT(acc[p].z);
        y[out_base + 3] = ACT(acc[p].w);
#else
        for (int j = 0; j < 4; ++j) {
            if (oc0 + j < cout) y[out_base + j] = ACT(acc[p][j]);
        }
#endif
    }
}
