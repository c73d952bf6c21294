#version 430
// A convolution whose kernel is a plain tensor (computed in the graph, or a constant operand of
// keras.ops.conv / depthwise_conv / conv_transpose): one output element per invocation.
// x [N, D, H, W, C] (1D and 2D convolutions have D = H = 1), y [N, OD, OH, OW, CO].
// Per spatial axis a: the tap k of output position o reads position p = o * stride + k * dil
// - pad of the input dilated by lhs (zeros between rows, as a transposed convolution's
// equivalent convolution reads it): p must be a multiple of lhs, and p / lhs inside the input.
// Groups: output channel co reads input channels [g * cin_pg, (g + 1) * cin_pg), g = co / cout_pg.
// The kernel weight of (taps kd, kh, kw, input channel ci of the group, co) is at
// kd * ks.x + kh * ks.y + kw * ks.z + ci * ci_stride + co * co_stride, each tap flipped
// (k -> K - 1 - k) when FLIP is set.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer K { float w[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
uniform uint n;
uniform ivec3 in_size;     // D, H, W
uniform int C;
uniform ivec3 out_size;    // OD, OH, OW
uniform int CO;
uniform ivec3 ksize;
uniform ivec3 stride;
uniform ivec3 dil;
uniform ivec3 lhs;
uniform ivec3 pad;
uniform ivec3 ks;
uniform int ci_stride;
uniform int co_stride;
uniform int cin_pg;
uniform int cout_pg;
uniform int flip;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int co = int(i % uint(CO));
    uint rest = i / uint(CO);
    int ox = int(rest % uint(out_size.z)); rest /= uint(out_size.z);
    int oy = int(rest % uint(out_size.y)); rest /= uint(out_size.y);
    int oz = int(rest % uint(out_size.x)); rest /= uint(out_size.x);
    int b = int(rest);
    int c0 = (co / cout_pg) * cin_pg;
    float acc = 0.0;
    for (int kz = 0; kz < ksize.x; ++kz) {
        int pz = oz * stride.x + kz * dil.x - pad.x;
        if (pz < 0 || pz % lhs.x != 0 || pz / lhs.x >= in_size.x) continue;
        int tz = flip != 0 ? ksize.x - 1 - kz : kz;
        for (int ky = 0; ky < ksize.y; ++ky) {
            int py = oy * stride.y + ky * dil.y - pad.y;
            if (py < 0 || py % lhs.y != 0 || py / lhs.y >= in_size.y) continue;
            int ty = flip != 0 ? ksize.y - 1 - ky : ky;
            for (int kx = 0; kx < ksize.z; ++kx) {
                int px = ox * stride.z + kx * dil.z - pad.z;
                if (px < 0 || px % lhs.z != 0 || px / lhs.z >= in_size.z) continue;
                int tx = flip != 0 ? ksize.z - 1 - kx : kx;
                int xbase = (((b * in_size.x + pz / lhs.x) * in_size.y + py / lhs.y) * in_size.z
                             + px / lhs.z) * C + c0;
                int wbase = tz * ks.x + ty * ks.y + tx * ks.z + co * co_stride;
                for (int ci = 0; ci < cin_pg; ++ci) {
                    acc += x[xbase + ci] * w[wbase + ci * ci_stride];
                }
            }
        }
    }
    y[i] = acc;
}
