#version 430
// Channels-last 2D max / average pooling (1D pooling runs as one row). One invocation per output
// pixel and VEC channels (4 when channels % 4 == 0, read as vec4). Padded cells never take part:
// max ignores them, average divides by the number of real cells (Keras's padding="same").
// ZERO_PAD: the padding is a ZeroPadding2D fused into this (valid) pooling instead: its cells are
// zeros that do take part (max with 0 where a window reaches them; average over the whole window).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;

#include "per_cell_input.glsl"

uniform int in_h;
uniform int in_w;
uniform int channels;   // in units of T
uniform int out_h;
uniform int out_w;
uniform int pool_h;
uniform int pool_w;
uniform int stride_h;
uniform int stride_w;
uniform int pad_top;
uniform int pad_left;
uniform uint n;         // number of outputs, in units of T

void main() {
    uint index = linear_index();
    if (index >= n) return;
    int c = int(index % uint(channels));
    int pixel = int(index / uint(channels));
    int ox = pixel % out_w;
    int rest = pixel / out_w;
    int oy = rest % out_h;
    int b = rest / out_h;
    int y0 = max(oy * stride_h - pad_top, 0);
    int y1 = min(oy * stride_h - pad_top + pool_h, in_h);
    int x0 = max(ox * stride_w - pad_left, 0);
    int x1 = min(ox * stride_w - pad_left + pool_w, in_w);
#if IS_MAX
    T acc = T(uintBitsToFloat(0xff800000u));  // -inf, where Keras starts a max
#else
    T acc = T(0.0);
#endif
    for (int iy = y0; iy < y1; ++iy) {
        int row = ((b * in_h + iy) * in_w) * channels + c;
        for (int ix = x0; ix < x1; ++ix) {
#if IS_MAX
            acc = nan_max(acc, LOAD_X(row + ix * channels));   // NaN propagates, as in Keras
#else
            acc += LOAD_X(row + ix * channels);
#endif
        }
    }
#if ZERO_PAD && IS_MAX
    if ((y1 - y0) * (x1 - x0) < pool_h * pool_w) acc = nan_max(acc, T(0.0));
#elif ZERO_PAD
    acc /= float(pool_h * pool_w);
#elif !IS_MAX
    acc /= float((y1 - y0) * (x1 - x0));
#endif
    STORE_Y(index, acc);
}
