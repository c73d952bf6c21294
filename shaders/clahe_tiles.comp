#version 430
// CLAHE, step 1 (Keras 3's ContrastLimitedAdaptiveHistogramEqualization): one invocation per
// (image, tile row, tile column, channel) of channels-last x [batch, height, width, channels].
// The image is padded at the bottom and right to whole tiles, symmetrically (numpy's "symmetric"
// pad); each value, in [0, 255] terms, falls in bin clamp(int(v), 0, 255) (NaN: bin 0). The
// histogram is clipped at `limit` (negative: not clipped), the excess spread evenly over the 256
// bins, and cdf[k] = clip((cumsum[k] - cumsum[0]) * 255 / (tile_h * tile_w - cumsum[0]), 0, 255)
// written to cdf[(((b * grid_h + gy) * grid_w + gx) * channels + c) * 256 + k].
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Cdf { float cdf[]; };
uniform uint n;
uniform int height;
uniform int width;
uniform int channels;
uniform int grid_h;
uniform int grid_w;
uniform int tile_h;
uniform int tile_w;
uniform float limit;
uniform float range_lo;
uniform float range_hi;

int symmetric(int i, int size) {
    int period = 2 * size;
    i = i % period;
    return i < size ? i : period - 1 - i;
}

void main() {
    uint t = linear_index();
    if (t >= n) return;
    int c = int(t % uint(channels));
    uint rest = t / uint(channels);
    int gx = int(rest % uint(grid_w));
    rest /= uint(grid_w);
    int gy = int(rest % uint(grid_h));
    int b = int(rest / uint(grid_h));
    float hist[256];
    for (int k = 0; k < 256; ++k) hist[k] = 0.0;
    for (int ty = 0; ty < tile_h; ++ty) {
        int sy = symmetric(gy * tile_h + ty, height);
        for (int tx = 0; tx < tile_w; ++tx) {
            int sx = symmetric(gx * tile_w + tx, width);
            float v = x[((b * height + sy) * width + sx) * channels + c];
#if RESCALE
            v = (v - range_lo) / (range_hi - range_lo) * 255.0;
#endif
            int bin = isnan(v) ? 0 : clamp(int(clamp(v, -1.0, 256.0)), 0, 255);
            hist[bin] += 1.0;
        }
    }
    if (limit >= 0.0) {
        float excess = 0.0;
        for (int k = 0; k < 256; ++k) {
            float clipped = clamp(hist[k], 0.0, limit);
            excess += hist[k] - clipped;
            hist[k] = clipped;
        }
        float redist = excess / 256.0;
        for (int k = 0; k < 256; ++k) hist[k] += redist;
    }
    uint base = t * 256u;
    float total = 0.0;
    float first = hist[0];
    float denominator = float(tile_h * tile_w) - first;
    denominator = denominator == 0.0 ? 1.0 : denominator;
    for (int k = 0; k < 256; ++k) {
        total += hist[k];
        cdf[base + uint(k)] = clamp((total - first) * 255.0 / denominator, 0.0, 255.0);
    }
}
