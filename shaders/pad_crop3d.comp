#version 430
// Channels-last 3D shift with zero fill: y[b, oz, oy, ox, c] = x[b, oz - front, oy - top,
// ox - left, c], or 0 outside x. Positive offsets pad (ZeroPadding3D), negative ones crop
// (Cropping3D).
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
uniform int front;
uniform int top;
uniform int left;
uniform uint n;

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
    int iz = oz - front;
    int iy = oy - top;
    int ix = ox - left;
    bool inside = iz >= 0 && iz < in_d && iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
    y[index] = inside ? x[(((b * in_d + iz) * in_h + iy) * in_w + ix) * channels + c] : T(0.0);
}
