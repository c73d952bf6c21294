#version 430
// Channels-last upsampling by integer factors. NEAREST repeats each pixel (Keras UpSampling);
// otherwise bilinear with half-pixel centres, samples clamped to the edge: what Keras 3's
// ops.image.resize (jax.image.resize, weights renormalised at the border) and tf.image.resize compute.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;

#if VEC == 4
#define T vec4
#else
#define T float
#endif
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };

uniform int in_h;
uniform int in_w;
uniform int channels;   // in units of T
uniform int factor_h;
uniform int factor_w;
uniform uint n;

T at(int b, int iy, int ix, int c) {
    return x[((b * in_h + iy) * in_w + ix) * channels + c];
}

void main() {
    uint index = linear_index();
    if (index >= n) return;
    int out_h = in_h * factor_h;
    int out_w = in_w * factor_w;
    int c = int(index % uint(channels));
    int pixel = int(index / uint(channels));
    int ox = pixel % out_w;
    int rest = pixel / out_w;
    int oy = rest % out_h;
    int b = rest / out_h;
#if NEAREST
    y[index] = at(b, oy / factor_h, ox / factor_w, c);
#else
    float sy = clamp((float(oy) + 0.5) / float(factor_h) - 0.5, 0.0, float(in_h - 1));
    float sx = clamp((float(ox) + 0.5) / float(factor_w) - 0.5, 0.0, float(in_w - 1));
    int y0 = int(floor(sy));
    int x0 = int(floor(sx));
    int y1 = min(y0 + 1, in_h - 1);
    int x1 = min(x0 + 1, in_w - 1);
    float fy = sy - float(y0);
    float fx = sx - float(x0);
    T top = mix(at(b, y0, x0, c), at(b, y0, x1, c), fx);
    T bottom = mix(at(b, y1, x0, c), at(b, y1, x1, c), fx);
    y[index] = mix(top, bottom, fy);
#endif
}
