#version 430
// Keras 3's ops.image.affine_transform on JAX, channels-last x [batch, height, width, channels],
// transform [batch or 1, 8] = (a0, a1, a2, b0, b1, b2, c0, c1). Keras's coordinates of output
// (y, x, c) are y' = y*b1 + x*b0 + c*c0 + b2, x' = y*a1 + x*a0 + c*c1 + a2 (c0 and c1 scale the
// channel index), read by jax.scipy.ndimage.map_coordinates: NEAREST rounds half away from
// zero; else linear weights between floor and floor + 1. Indices outside the image: FILL_MODE
// 0 constant (`fill`), 1 nearest (clamped), 2 wrap, 3 mirror, 4 reflect.
// PERSPECTIVE: ops.image.perspective_transform instead, t the homography (h0..h7,
// homography.comp): x' = (h0 x + h1 y + h2) / d, y' = (h3 x + h4 y + h5) / d with
// d = h6 x + h7 y + 1 (constant fill).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer T { float t[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
uniform uint n;
uniform int height;
uniform int width;
uniform int channels;
uniform int transforms;     // 1: one transform for every image
uniform float fill;

// a mod m in [0, m) (GLSL leaves % of a negative int undefined).
int floor_mod(int a, int m) { return a >= 0 ? a % m : (m - 1) - ((-a - 1) % m); }

int mirror(int i, int size) {
    int s = size - 1;
    return abs(floor_mod(i + s, 2 * s) - s);
}

// The index along an axis of `size`, or -1 where the constant fill applies.
int fix_index(int i, int size) {
#if FILL_MODE == 0
    return (i < 0 || i >= size) ? -1 : i;
#elif FILL_MODE == 1
    return clamp(i, 0, size - 1);
#elif FILL_MODE == 2
    return floor_mod(i, size);
#elif FILL_MODE == 3
    return mirror(i, size);
#else
    int m = mirror(2 * i + 1, 2 * size + 1) - 1;
    return m >= 0 ? m / 2 : -((1 - m) / 2);
#endif
}

float at(int b, int iy, int ix, int c) {
    int fy = fix_index(iy, height), fx = fix_index(ix, width);
    if (fy < 0 || fx < 0) return fill;
    return x[((b * height + fy) * width + fx) * channels + c];
}

float round_away(float v) { return sign(v) * floor(abs(v) + 0.5); }

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int c = int(i % uint(channels));
    uint pixel = i / uint(channels);
    int ox = int(pixel % uint(width));
    uint rest = pixel / uint(width);
    int oy = int(rest % uint(height));
    int b = int(rest / uint(height));
    uint base = uint(transforms == 1 ? 0 : b) * 8u;
    float fy = float(oy), fx = float(ox), fc = float(c);
#if PERSPECTIVE
    float d = t[base + 6u] * fx + t[base + 7u] * fy + 1.0;
    float sx = (t[base + 0u] * fx + t[base + 1u] * fy + t[base + 2u]) / d;
    float sy = (t[base + 3u] * fx + t[base + 4u] * fy + t[base + 5u]) / d;
#else
    float sy = fy * t[base + 4u] + fx * t[base + 3u] + fc * t[base + 6u] + t[base + 5u];
    float sx = fy * t[base + 1u] + fx * t[base + 0u] + fc * t[base + 7u] + t[base + 2u];
#endif
#if NEAREST
    y[i] = at(b, int(round_away(sy)), int(round_away(sx)), c);
#else
    float y0 = floor(sy), x0 = floor(sx);
    float wy = sy - y0, wx = sx - x0;
    int iy = int(y0), ix = int(x0);
    y[i] = (1.0 - wy) * (1.0 - wx) * at(b, iy, ix, c) + (1.0 - wy) * wx * at(b, iy, ix + 1, c)
         + wy * (1.0 - wx) * at(b, iy + 1, ix, c) + wy * wx * at(b, iy + 1, ix + 1, c);
#endif
}
