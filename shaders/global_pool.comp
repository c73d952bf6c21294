#version 430
// Max or mean over the spatial positions of a channels-last tensor [batch, positions, channels]
// (GlobalMax/GlobalAveragePooling 1D and 2D). One invocation per (batch, VEC channels).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;

#if VEC == 4
#define T vec4
#else
#define T float
#endif
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };

uniform int positions;
uniform int channels;   // in units of T
uniform uint n;         // batch * channels

void main() {
    uint index = linear_index();
    if (index >= n) return;
    int c = int(index % uint(channels));
    int b = int(index / uint(channels));
    int at = b * positions * channels + c;
#if IS_MAX
    T acc = T(uintBitsToFloat(0xff800000u));  // -inf, where Keras starts a max
    for (int i = 0; i < positions; ++i) acc = max(acc, x[at + i * channels]);
#else
    T acc = T(0.0);
    for (int i = 0; i < positions; ++i) acc += x[at + i * channels];
    acc /= float(positions);
#endif
    y[index] = acc;
}
