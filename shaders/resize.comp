#version 430
// Channels-last image resize of the window rows [top, top + in_h), columns [left, left + in_w)
// of x to out_h x out_w, as jax.image.resize (Keras 3's ops.image.resize on JAX) computes it.
// The window may reach beyond x (pad_to_aspect_ratio): its cells there hold `fill`.
// NEAREST: input index floor((o + 0.5) * in / out), in integers (jax computes it in float32,
// which agrees wherever in * out stays below 2^23). Otherwise the triangle kernel at half-pixel
// centres: sample s = (o + 0.5) * inv_scale - 0.5, weights max(0, 1 - |s - i| / kernel_scale)
// over the window's pixels, each divided by their sum. kernel_scale is 1 (plain bilinear: the
// sum renormalises the weights at the border, as clamping to the edge would) or, antialiased,
// max(inv_scale, 1): a wider triangle when downscaling.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;

#if VEC == 4
#define T vec4
#else
#define T float
#endif
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };

uniform int src_h;      // x's full height and width
uniform int src_w;
uniform int top;
uniform int left;
uniform int in_h;       // the window's height and width
uniform int in_w;
uniform int out_h;
uniform int out_w;
uniform int channels;   // in units of T
uniform float inv_scale_h;
uniform float inv_scale_w;
uniform float kernel_scale_h;
uniform float kernel_scale_w;
uniform float fill;
uniform uint n;

T at(int b, int iy, int ix, int c) {
    int sy = top + iy;
    int sx = left + ix;
    if (sy < 0 || sy >= src_h || sx < 0 || sx >= src_w) return T(fill);
    return x[((b * src_h + sy) * src_w + sx) * channels + c];
}

float triangle(float s, int i, float kernel_scale) {
    return max(0.0, 1.0 - abs(s - float(i)) / kernel_scale);
}

// The sample position of output o along one axis, the input indices its kernel reaches, and the
// sum of their weights (0 where jax gives the output no weight at all).
void span(int o, int size, float inv_scale, float kernel_scale,
          out float s, out int first, out int last, out float total) {
    s = (float(o) + 0.5) * inv_scale - 0.5;
    first = max(0, int(floor(s - kernel_scale)));
    last = min(size - 1, int(ceil(s + kernel_scale)));
    total = 0.0;
    for (int i = first; i <= last; ++i) total += triangle(s, i, kernel_scale);
    // jax: weights of a sum this small are zeroed, and so are samples outside [-0.5, size - 0.5]
    if (!(abs(total) > 1000.0 * 1.1920929e-07) || s < -0.5 || s > float(size) - 0.5) total = 0.0;
}

void main() {
    uint index = linear_index();
    if (index >= n) return;
    int c = int(index % uint(channels));
    int pixel = int(index / uint(channels));
    int ox = pixel % out_w;
    int rest = pixel / out_w;
    int oy = rest % out_h;
    int b = rest / out_h;
#if NEAREST
    int iy = ((2 * oy + 1) * in_h) / (2 * out_h);
    int ix = ((2 * ox + 1) * in_w) / (2 * out_w);
    y[index] = at(b, iy, ix, c);
#else
    float sy, sx, total_y, total_x;
    int y0, y1, x0, x1;
    span(oy, in_h, inv_scale_h, kernel_scale_h, sy, y0, y1, total_y);
    span(ox, in_w, inv_scale_w, kernel_scale_w, sx, x0, x1, total_x);
    T acc = T(0.0);
    if (total_y != 0.0 && total_x != 0.0) {
        for (int iy = y0; iy <= y1; ++iy) {
            float wy = triangle(sy, iy, kernel_scale_h) / total_y;
            if (wy == 0.0) continue;
            T row = T(0.0);
            for (int ix = x0; ix <= x1; ++ix) {
                float wx = triangle(sx, ix, kernel_scale_w) / total_x;
                if (wx != 0.0) row += wx * at(b, iy, ix, c);
            }
            acc += wy * row;
        }
    }
    y[index] = acc;
#endif
}
