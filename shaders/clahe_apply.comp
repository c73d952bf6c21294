#version 430
// CLAHE, step 2: each output value of channels-last x [batch, height, width, channels] is its
// bin's value in the CDFs of the four tiles around it (clahe_tiles.comp), interpolated
// bilinearly between the tiles' centres (edge tiles repeated beyond the border), as Keras does:
// grid position (p - tile / 2) / tile + 1 along each axis, over a grid padded by one tile.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Cdf { float cdf[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
uniform uint n;
uniform int height;
uniform int width;
uniform int channels;
uniform int grid_h;
uniform int grid_w;
uniform int tile_h;
uniform int tile_w;
uniform float range_lo;
uniform float range_hi;

// The padded grid's row / column r (0 and size + 1 repeat the edge tiles) as a tile index.
int tile_of(float r, int size) {
    return clamp(int(clamp(r, 0.0, float(size + 1))) - 1, 0, size - 1);
}

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int c = int(i % uint(channels));
    uint pixel = i / uint(channels);
    int px = int(pixel % uint(width));
    uint rest = pixel / uint(width);
    int py = int(rest % uint(height));
    int b = int(rest / uint(height));
    float v = x[i];
#if RESCALE
    v = (v - range_lo) / (range_hi - range_lo) * 255.0;
#endif
    int bin = isnan(v) ? 0 : int(clamp(v, 0.0, 255.0));
    precise float gy = (float(py) - float(tile_h) / 2.0) / float(tile_h) + 1.0;
    precise float gx = (float(px) - float(tile_w) / 2.0) / float(tile_w) + 1.0;
    float y0 = floor(gy), x0 = floor(gx);
    float wy = gy - y0, wx = gx - x0;
    int ty0 = tile_of(y0, grid_h), ty1 = tile_of(y0 + 1.0, grid_h);
    int tx0 = tile_of(x0, grid_w), tx1 = tile_of(x0 + 1.0, grid_w);
    int image = b * grid_h;
    float nw = cdf[(((image + ty0) * grid_w + tx0) * channels + c) * 256 + bin];
    float ne = cdf[(((image + ty0) * grid_w + tx1) * channels + c) * 256 + bin];
    float sw = cdf[(((image + ty1) * grid_w + tx0) * channels + c) * 256 + bin];
    float se = cdf[(((image + ty1) * grid_w + tx1) * channels + c) * 256 + bin];
    float top = nw * (1.0 - wx) + ne * wx;
    float bottom = sw * (1.0 - wx) + se * wx;
    float result = top * (1.0 - wy) + bottom * wy;
#if RESCALE
    result = result / 255.0 * (range_hi - range_lo) + range_lo;
#endif
    y[i] = result;
}
