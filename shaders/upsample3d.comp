#version 430
// Channels-last 3D nearest upsampling by integer factors: every voxel repeated factor_d x
// factor_h x factor_w times (Keras's UpSampling3D, three ops.repeat calls).
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
uniform int factor_d;
uniform int factor_h;
uniform int factor_w;
uniform uint n;

void main() {
    uint index = linear_index();
    if (index >= n) return;
    int out_d = in_d * factor_d;
    int out_h = in_h * factor_h;
    int out_w = in_w * factor_w;
    int c = int(index % uint(channels));
    int voxel = int(index / uint(channels));
    int ox = voxel % out_w;
    int rest = voxel / out_w;
    int oy = rest % out_h;
    rest /= out_h;
    int oz = rest % out_d;
    int b = rest / out_d;
    int iz = oz / factor_d;
    int iy = oy / factor_h;
    int ix = ox / factor_w;
    y[index] = x[(((b * in_d + iz) * in_h + iy) * in_w + ix) * channels + c];
}
