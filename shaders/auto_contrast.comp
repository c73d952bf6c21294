#version 430
// Keras 3's AutoContrast of channels-last images x [batch, pixels, channels], given each image's
// per-channel minimum `low` and maximum `high` [batch, channels] (of x; x' maps them exactly, being
// monotone):
// v = clip(x' * scale + offset, 0, 255) with scale = 255 / (high - low), offset = -low * scale,
// mapped back to the value range; where that is NaN (a constant or non-finite channel) the
// output is the input. x' = (x - range_lo) / (range_hi - range_lo) * 255 unless the value range
// is [0, 255] (RESCALE 0).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Low { float low[]; };
layout(std430, binding = 2) readonly buffer High { float high[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
uniform uint n;
uniform uint channels;
uniform uint pixels;          // per image
uniform float range_lo;
uniform float range_hi;

float to_255(float v) {
#if RESCALE
    return (v - range_lo) / (range_hi - range_lo) * 255.0;
#else
    return v;
#endif
}

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint c = i % channels;
    uint stat = (i / (channels * pixels)) * channels + c;
    float original = x[i];
    float lo = to_255(low[stat]);
    precise float scale = 255.0 / (to_255(high[stat]) - lo);
    precise float offset = -lo * scale;
    precise float v = clamp(to_255(original) * scale + offset, 0.0, 255.0);
#if RESCALE
    v = v / 255.0 * (range_hi - range_lo) + range_lo;
#endif
    // clamp may drop a NaN: the NaN of Keras's v is that of to_255(original) * scale + offset.
    precise float raw = to_255(original) * scale + offset;
    y[i] = isnan(raw) ? original : v;
}
