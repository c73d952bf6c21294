#version 430
// Channels-last adaptive max / average pooling over up to three spatial axes (1D and 2D inputs
// come as volumes with depth / height 1). Output cell o of an axis of length L pooled to O cells
// reads input cells [floor(o * L / O), ceil((o + 1) * L / O)), as keras.ops.adaptive_*_pool.
// One invocation per output cell and VEC channels. Defines: IS_MAX, VEC.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;

#if VEC == 4
#define T vec4
#else
#define T float
#endif
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };

uniform int in_d;
uniform int in_h;
uniform int in_w;
uniform int channels;   // in units of T
uniform int out_d;
uniform int out_h;
uniform int out_w;
uniform uint n;         // number of outputs, in units of T

// [start, end) of output cell o along an axis of in_len cells pooled to out_len.
ivec2 bin(int o, int in_len, int out_len) {
    return ivec2((o * in_len) / out_len, ((o + 1) * in_len + out_len - 1) / out_len);
}

void main() {
    uint index = linear_index();
    if (index >= n) return;
    int c = int(index % uint(channels));
    int cell = int(index / uint(channels));
    int ox = cell % out_w;
    int rest = cell / out_w;
    int oy = rest % out_h;
    rest /= out_h;
    int oz = rest % out_d;
    int b = rest / out_d;
    ivec2 zs = bin(oz, in_d, out_d);
    ivec2 ys = bin(oy, in_h, out_h);
    ivec2 xs = bin(ox, in_w, out_w);
#if IS_MAX
    T acc = T(uintBitsToFloat(0xff800000u));  // -inf, where Keras starts a max
#else
    T acc = T(0.0);
#endif
    for (int iz = zs.x; iz < zs.y; ++iz) {
        for (int iy = ys.x; iy < ys.y; ++iy) {
            int row = (((b * in_d + iz) * in_h + iy) * in_w) * channels + c;
            for (int ix = xs.x; ix < xs.y; ++ix) {
#if IS_MAX
                acc = nan_max(acc, x[row + ix * channels]);   // NaN propagates, as in Keras
#else
                acc += x[row + ix * channels];
#endif
            }
        }
    }
#if !IS_MAX
    acc /= float((zs.y - zs.x) * (ys.y - ys.x) * (xs.y - xs.x));
#endif
    y[index] = acc;
}
