#version 430
// Colour conversions of channels-last pixels, as Keras 3's ops.image computes them on JAX.
// MODE 0: RGB -> grayscale (the weighted sum 0.2989 r + 0.587 g + 0.114 b, one channel out);
// MODE 1: RGB -> HSV and MODE 2: HSV -> RGB (dm_pix's formulas, three channels out).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform uint n;            // pixels

void main() {
    uint p = linear_index();
    if (p >= n) return;
    float r = x[3u * p], g = x[3u * p + 1u], b = x[3u * p + 2u];
#if MODE == 0
    y[p] = r * 0.2989 + g * 0.587 + b * 0.114;
#elif MODE == 1
    // Values closer to 0 than float32's epsilon count as 0.
    r = abs(r) < 1.1920929e-07 ? 0.0 : r;
    g = abs(g) < 1.1920929e-07 ? 0.0 : g;
    b = abs(b) < 1.1920929e-07 ? 0.0 : b;
    float value = max(max(r, g), b);
    float range_ = value - min(min(r, g), b);
    float saturation = value > 0.0 ? range_ / value : 0.0;
    float norm = 1.0 / (6.0 * (range_ > 0.0 ? range_ : 1.0));
    float hue = value == g ? norm * (b - r) + 2.0 / 6.0 : norm * (r - g) + 4.0 / 6.0;
    hue = value == r ? norm * (g - b) : hue;
    hue = (range_ > 0.0 ? hue : 0.0) + (hue < 0.0 ? 1.0 : 0.0);
    y[3u * p] = hue;
    y[3u * p + 1u] = saturation;
    y[3u * p + 2u] = value;
#else
    float dh = (r - floor(r)) * 6.0;
    float dr = clamp(abs(dh - 3.0) - 1.0, 0.0, 1.0);
    float dg = clamp(2.0 - abs(dh - 2.0), 0.0, 1.0);
    float db = clamp(2.0 - abs(dh - 4.0), 0.0, 1.0);
    float one_minus_s = 1.0 - g;
    y[3u * p] = b * (one_minus_s + g * dr);
    y[3u * p + 1u] = b * (one_minus_s + g * dg);
    y[3u * p + 2u] = b * (one_minus_s + g * db);
#endif
}
