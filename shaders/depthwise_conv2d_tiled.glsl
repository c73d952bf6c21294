// The depthwise convolution in work groups shaped for GPUs: the main() of depthwise_conv2d.comp
// under TILED (its declarations, activation, X / W loads (LOAD_X4, LOAD_X: a buffer, a view or a
// texture read in place), stores (STORE_Y4, STORE_Y) and bias come from there).
//
// A work group computes TILE_H x TILE_W output pixels of one image for TILE_C vec4s of output
// channels (4 * TILE_C channels). It first loads the input those outputs read, IN_TH x IN_TW
// pixels (the output tile times the stride, plus the kernel's halo at its dilation:
// (TILE - 1) * STRIDE + (K - 1) * DIL + 1), cooperatively into shared memory, one vec4 per
// pixel and channel block, padding and pixels past the image staged as zeros; after one
// barrier, each invocation computes TPIX horizontally adjacent outputs of one channel block from
// shared memory. Each input value is fetched from global memory once per work group instead of
// once per output that reads it (9 times for a 3x3 kernel at stride 1).
//
// The shared tile holds the input by output channel: the vec4 of channel block cb holds the
// input channels of output channels 4cb..4cb+3 (oc / MULT), so that a depth multiplier above 1
// or channels that are not whole vec4s (the scalar loads) compute like the plain case. Lanes
// run through the channel blocks fastest, then the pixels of a row: neighbouring lanes load
// neighbouring vec4s of global memory (coalesced) and read neighbouring vec4s of shared memory.
//
// Each output is bias + the taps in (kh, kw) order, a padded tap adding w * 0 (0 * inf = NaN,
// as in Keras), exactly as the row kernel sums them.
//
// kerasgl/ops/conv.py (depthwise_tiles) sizes the tile against the device's limits and defines
// TILE_H, TILE_W, TILE_C, TPIX, IN_TH, IN_TW, TSPAN = (TPIX - 1) * STRIDE_W + (KW - 1) * DIL_W + 1
// and LOCAL_SIZE = TILE_C * TILE_H * TILE_W / TPIX.

#define TILE_PIXELS (IN_TH * IN_TW)
shared vec4 x_tile[TILE_PIXELS * TILE_C];   // [row][column][channel block]

uniform int tiles_w;    // ceil(out_w / TILE_W)
uniform int tiles_h;    // ceil(out_h / TILE_H)
uniform int cgroups;    // ceil(cblocks / TILE_C)
uniform uint n_groups;  // batch * cgroups * tiles_h * tiles_w

void main() {
    // Work groups folded into 2D past 65535 (dispatch.groups_for): the fold's last row may hold
    // groups past the end, which stage and compute like the last one and store nothing (a
    // return would put the barrier after it).
    uint folded = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    bool live = folded < n_groups;
    int g = int(min(folded, n_groups - 1u));
    int tx = g % tiles_w;
    g /= tiles_w;
    int ty = g % tiles_h;
    g /= tiles_h;
    int cg = g % cgroups;
    int n = g / cgroups;
    int oy0 = ty * TILE_H;
    int ox0 = tx * TILE_W;
    int cb0 = cg * TILE_C;
    int iy0 = oy0 * STRIDE_H - pad_top;
    int ix0 = ox0 * STRIDE_W - pad_left;
    int img_base = n * in_h * in_w * cin;
    int lane = int(gl_LocalInvocationID.x);

    for (int i = lane; i < TILE_PIXELS * TILE_C; i += LOCAL_SIZE) {
        int c = i % TILE_C;
        int pixel = i / TILE_C;
        int iy = iy0 + pixel / IN_TW;
        int ix = ix0 + pixel % IN_TW;
        int cb = cb0 + c;
        vec4 value = vec4(0.0);
        if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w && cb < cblocks) {
            int at = img_base + (iy * in_w + ix) * cin;
#if VEC_IN
            value = LOAD_X4((at >> 2) + cb);
#else
            // Input channel of each of the 4 output channels (clamped past the end: weights
            // there are 0).
            int oc = cb * 4;
            ivec4 ic = min(ivec4(oc, oc + 1, oc + 2, oc + 3), ivec4(cout - 1)) / MULT;
            value = vec4(LOAD_X(at + ic.x), LOAD_X(at + ic.y), LOAD_X(at + ic.z), LOAD_X(at + ic.w));
#endif
        }
        x_tile[i] = value;
    }
    barrier();

    int c = lane % TILE_C;
    int rest = lane / TILE_C;
    int px = (rest % (TILE_W / TPIX)) * TPIX;     // first output column, within the tile
    int py = rest / (TILE_W / TPIX);              // output row, within the tile
    int cb = cb0 + c;
    int cw = min(cb, cblocks - 1);                // blocks past the end compute, store nothing
    vec4 acc[TPIX];
    vec4 b = bias[cw];
    for (int p = 0; p < TPIX; ++p) acc[p] = b;
    for (int kh = 0; kh < KH; ++kh) {
        // The TSPAN columns of this kernel row that the TPIX outputs read, each once (those
        // between dilated taps are never read: the compiler drops their loads).
        int row = ((py * STRIDE_H + kh * DIL_H) * IN_TW + px * STRIDE_W) * TILE_C + c;
        vec4 xs[TSPAN];
        for (int j = 0; j < TSPAN; ++j) xs[j] = x_tile[row + j * TILE_C];
        for (int kw = 0; kw < KW; ++kw) {
            vec4 wv = LOAD_W((kh * KW + kw) * cblocks + cw);
            for (int p = 0; p < TPIX; ++p) acc[p] += wv * xs[p * STRIDE_W + kw * DIL_W];
        }
    }

    int oy = oy0 + py;
    if (!live || cb >= cblocks || oy >= out_h) return;
    for (int p = 0; p < TPIX; ++p) {
        int ox = ox0 + px + p;
        if (ox >= out_w) break;
        int out_base = ((n * out_h + oy) * out_w + ox) * cout + cb * 4;
#if VEC_OUT
        vec4 a = acc[p];
        STORE_Y4(out_base >> 2, vec4(ACT(a.x), ACT(a.y), ACT(a.z), ACT(a.w)));
#else
        for (int j = 0; j < 4; ++j) {
            if (cb * 4 + j < cout) STORE_Y(out_base + j, ACT(acc[p][j]));
        }
#endif
    }
}
