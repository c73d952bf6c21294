#version 430
// The perspective transform's coefficients per image, as Keras 3's compute_homography_matrix
// (JAX) finds them: the 8x8 system built from start points s and end points e [batch, 4, 2]
// (rows (ex, ey, 1, 0, 0, 0, -sx ex, -sx ey) = sx and (0, 0, 0, ex, ey, 1, -sy ex, -sy ey) = sy),
// solved by Gaussian elimination with partial pivoting; h [batch, 8].
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer S { float s[]; };
layout(std430, binding = 1) readonly buffer E { float e[]; };
layout(std430, binding = 2) writeonly buffer H { float h[]; };
uniform uint n;            // images

void main() {
    uint b = linear_index();
    if (b >= n) return;
    float a[8][9];
    for (int p = 0; p < 4; ++p) {
        float sx = s[b * 8u + uint(2 * p)], sy = s[b * 8u + uint(2 * p + 1)];
        float ex = e[b * 8u + uint(2 * p)], ey = e[b * 8u + uint(2 * p + 1)];
        for (int k = 0; k < 9; ++k) { a[p][k] = 0.0; a[p + 4][k] = 0.0; }
        a[p][0] = ex; a[p][1] = ey; a[p][2] = 1.0;
        a[p][6] = -sx * ex; a[p][7] = -sx * ey; a[p][8] = sx;
        a[p + 4][3] = ex; a[p + 4][4] = ey; a[p + 4][5] = 1.0;
        a[p + 4][6] = -sy * ex; a[p + 4][7] = -sy * ey; a[p + 4][8] = sy;
    }
    for (int col = 0; col < 8; ++col) {
        int pivot = col;
        for (int r = col + 1; r < 8; ++r)
            if (abs(a[r][col]) > abs(a[pivot][col])) pivot = r;
        for (int k = 0; k < 9; ++k) {
            float tmp = a[col][k]; a[col][k] = a[pivot][k]; a[pivot][k] = tmp;
        }
        for (int r = col + 1; r < 8; ++r) {
            float f = a[r][col] / a[col][col];
            for (int k = col; k < 9; ++k) a[r][k] -= f * a[col][k];
        }
    }
    float x[8];
    for (int r = 7; r >= 0; --r) {
        float v = a[r][8];
        for (int k = r + 1; k < 8; ++k) v -= a[r][k] * x[k];
        x[r] = v / a[r][r];
    }
    for (int k = 0; k < 8; ++k) h[b * 8u + uint(k)] = x[k];
}
