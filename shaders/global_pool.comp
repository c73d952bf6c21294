#version 430
// Max or mean over the spatial positions of a channels-last tensor [batch, positions, channels]
// (GlobalMax/GlobalAveragePooling 1D and 2D). One invocation per (batch, VEC channels).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;

#include "per_cell_input.glsl"

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
    // NaN propagates, as in Keras (jnp.max).
    for (int i = 0; i < positions; ++i) acc = nan_max(acc, LOAD_X(at + i * channels));
#else
    T acc = T(0.0);
    for (int i = 0; i < positions; ++i) acc += LOAD_X(at + i * channels);
    acc /= float(positions);
#endif
    STORE_Y(index, acc);
}
