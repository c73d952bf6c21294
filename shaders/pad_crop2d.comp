#version 430
// Channels-last spatial shift with zero fill: y[b, oy, ox, c] = x[b, oy - top, ox - left, c], or 0
// outside x. Positive top/left pad (ZeroPadding), negative ones crop (Cropping); 1D runs as one row.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;

#include "per_cell_input.glsl"

uniform int in_h;
uniform int in_w;
uniform int channels;   // in units of T
uniform int out_h;
uniform int out_w;
uniform int top;
uniform int left;
uniform uint n;

void main() {
    uint index = linear_index();
    if (index >= n) return;
    int c = int(index % uint(channels));
    int pixel = int(index / uint(channels));
    int ox = pixel % out_w;
    int rest = pixel / out_w;
    int oy = rest % out_h;
    int b = rest / out_h;
    int iy = oy - top;
    int ix = ox - left;
    bool inside = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
    STORE_Y(index, inside ? LOAD_X(((b * in_h + iy) * in_w + ix) * channels + c) : T(0.0));
}
