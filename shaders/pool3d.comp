#version 430
// Channels-last 3D max / average pooling: shaders/pool2d.comp with a depth axis. One invocation
// per output voxel and VEC channels (4 when channels % 4 == 0, read as vec4). Padded cells never
// take part: max ignores them, average divides by the number of real cells (Keras's "same").
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
uniform int pool_d;
uniform int pool_h;
uniform int pool_w;
uniform int stride_d;
uniform int stride_h;
uniform int stride_w;
uniform int pad_front;
uniform int pad_top;
uniform int pad_left;
uniform uint n;         // number of outputs, in units of T

void main() {
    uint index = linear_index();
    if (index >= n) return;
    int c = int(index % uint(channels));
    int voxel = int(index / uint(channels));
    int ox = voxel % out_w;
    int rest = voxel / out_w;
    int oy = rest % out_h;
    rest /= out_h;
    int oz = rest % out_d;
    int b = rest / out_d;
    int z0 = max(oz * stride_d - pad_front, 0);
    int z1 = min(oz * stride_d - pad_front + pool_d, in_d);
    int y0 = max(oy * stride_h - pad_top, 0);
    int y1 = min(oy * stride_h - pad_top + pool_h, in_h);
    int x0 = max(ox * stride_w - pad_left, 0);
    int x1 = min(ox * stride_w - pad_left + pool_w, in_w);
#if IS_MAX
    T acc = T(uintBitsToFloat(0xff800000u));  // -inf, where Keras starts a max
#else
    T acc = T(0.0);
#endif
    for (int iz = z0; iz < z1; ++iz) {
        for (int iy = y0; iy < y1; ++iy) {
            int row = (((b * in_d + iz) * in_h + iy) * in_w) * channels + c;
            for (int ix = x0; ix < x1; ++ix) {
#if IS_MAX
                acc = nan_max(acc, x[row + ix * channels]);   // NaN propagates, as in Keras
#else
                acc += x[row + ix * channels];
#endif
            }
        }
    }
#if !IS_MAX
    acc /= float((z1 - z0) * (y1 - y0) * (x1 - x0));
#endif
    y[index] = acc;
}
