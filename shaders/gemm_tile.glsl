// The main loop of a tiled GEMM, C = A @ B, for work groups shaped for GPUs: included by
// matmul_tiled.comp (a matmul) and conv_gemm.comp (a convolution as an implicit GEMM), which say
// where A, B and C are (the functions below). kerasgl/ops/gemm_tiles.py picks the tile shape
// from the device's tuning and checks it against the device's limits.
//
// A work group computes a TILE_M x TILE_N tile of C with (TILE_N / BLOCK_N) x (TILE_M / BLOCK_M)
// invocations, each holding BLOCK_M x BLOCK_N outputs in registers (register blocking: every
// value it reads from shared memory feeds BLOCK_N or BLOCK_M multiply-adds). The K loop stages a
// TILE_K-deep slice of A and of B in shared memory per step, loaded by the whole group in vec4s
// (each value fetched from global memory once per work group, not once per invocation), between
// two barriers. A is kept transposed in shared memory, so that the 4 rows an invocation needs at
// one k are one vec4. An invocation owns every LX-th vec4 of columns and every LY-th quad of rows
// of the tile: neighbouring lanes read neighbouring shared vec4s (no bank conflicts) and write
// neighbouring vec4s of C (coalesced).
//
// Each output is sum over k in order of A[m][k] * B[k][n]: the same products as every other
// GEMM variant, summed in another order (float rounding only).
//
// The including shader defines, before including this file:
//   TILE_M, TILE_N, TILE_K, BLOCK_M, BLOCK_N   (BLOCK_* and TILE_K multiples of 4), and
//   LX = TILE_N / BLOCK_N, LY = TILE_M / BLOCK_M (GLSL 4.30 takes only a literal as a local size)
//   vec4 gemm_load_a(int m, int k)   A[m][k..k+3]; called only for m < M, k < K
//   vec4 gemm_load_b(int k, int n)   B[k][n..n+3] (B_ALONG_K: B[k..k+3][n]); only for k < K, n < N
//   void gemm_store(int m, int n, vec4 c)   C[m][n..n+3] = c with its epilogue; only m < M, n < N
// K and (without B_ALONG_K) N must be multiples of 4: a vec4 is then wholly inside or outside.

#define INVOCATIONS (LX * LY)
#define MQ (BLOCK_M / 4)
#define NQ (BLOCK_N / 4)
#define KQ (TILE_K / 4)

layout(local_size_x = LX, local_size_y = LY) in;

shared vec4 a_tile[TILE_K][TILE_M / 4];   // a_tile[k][q][r] = A[m0 + 4q + r][k0 + k]
shared vec4 b_tile[TILE_K][TILE_N / 4];   // b_tile[k][q] = B[k0 + k][n0 + 4q .. 4q + 3]

void gemm_tile(int M, int N, int K, int m0, int n0) {
    int tx = int(gl_LocalInvocationID.x);
    int ty = int(gl_LocalInvocationID.y);
    int lane = ty * LX + tx;
    vec4 acc[BLOCK_M][NQ];
    for (int r = 0; r < BLOCK_M; ++r) {
        for (int j = 0; j < NQ; ++j) acc[r][j] = vec4(0.0);
    }
    for (int k0 = 0; k0 < K; k0 += TILE_K) {
        // A's slice, TILE_M x TILE_K: vec4s along k, stored transposed.
        for (int i = lane; i < TILE_M * KQ; i += INVOCATIONS) {
            int m = i / KQ, k = (i % KQ) * 4;
            vec4 v = m0 + m < M && k0 + k < K ? gemm_load_a(m0 + m, k0 + k) : vec4(0.0);
            a_tile[k][m >> 2][m & 3] = v.x;
            a_tile[k + 1][m >> 2][m & 3] = v.y;
            a_tile[k + 2][m >> 2][m & 3] = v.z;
            a_tile[k + 3][m >> 2][m & 3] = v.w;
        }
        // B's slice, TILE_K x TILE_N.
#if B_ALONG_K
        for (int i = lane; i < TILE_N * KQ; i += INVOCATIONS) {
            int n = i / KQ, k = (i % KQ) * 4;
            vec4 v = n0 + n < N && k0 + k < K ? gemm_load_b(k0 + k, n0 + n) : vec4(0.0);
            b_tile[k][n >> 2][n & 3] = v.x;
            b_tile[k + 1][n >> 2][n & 3] = v.y;
            b_tile[k + 2][n >> 2][n & 3] = v.z;
            b_tile[k + 3][n >> 2][n & 3] = v.w;
        }
#else
        for (int i = lane; i < TILE_K * (TILE_N / 4); i += INVOCATIONS) {
            int k = i / (TILE_N / 4), n = (i % (TILE_N / 4)) * 4;
            b_tile[k][n >> 2] = k0 + k < K && n0 + n < N ? gemm_load_b(k0 + k, n0 + n) : vec4(0.0);
        }
#endif
        barrier();
        for (int k = 0; k < TILE_K; ++k) {
            vec4 a[MQ], b[NQ];
            for (int i = 0; i < MQ; ++i) a[i] = a_tile[k][ty + i * LY];
            for (int j = 0; j < NQ; ++j) b[j] = b_tile[k][tx + j * LX];
            for (int i = 0; i < MQ; ++i) {
                for (int r = 0; r < 4; ++r) {
                    for (int j = 0; j < NQ; ++j) acc[4 * i + r][j] += a[i][r] * b[j];
                }
            }
        }
        barrier();
    }
    for (int i = 0; i < MQ; ++i) {
        for (int r = 0; r < 4; ++r) {
            int m = m0 + 4 * (ty + i * LY) + r;
            if (m >= M) continue;
            for (int j = 0; j < NQ; ++j) {
                int n = n0 + 4 * (tx + j * LX);
                if (n < N) gemm_store(m, n, acc[4 * i + r][j]);
            }
        }
    }
}
