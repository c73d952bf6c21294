// What matmul.comp and matmul_tiled.comp share: the uniforms that lay out A, B and C (set by
// kerasgl/ops/matmul.py), the batch offsets of one matrix product, and the epilogue's
// activation. Both read A[b, m, k] = a[a_batch_offset(b) + m * a_rs + k * a_cs] (likewise B).
#define MAX_BATCH_RANK 6
uniform int M;
uniform int N;
uniform int K;
uniform int a_rs;
uniform int a_cs;
uniform int b_rs;
uniform int b_cs;
uniform int a_off;            // element offset of A's first matrix (a view into a larger buffer)
uniform int b_off;
// C[b, m, n] = c[b * M * c_rs + m * c_rs + c_off + n]: c_rs = N and c_off = 0, except for a piece
// of a Dense kernel split over several buffers (kerasgl/ops/splits.py), which writes its columns
// c_off.. of an output c_rs wide.
uniform int c_rs;
uniform int c_off;
uniform int batch_base;       // first batch index of this dispatch (batches past 65535 groups)
uniform int batch_rank;
uniform int batch_shape[MAX_BATCH_RANK];
uniform int a_batch_strides[MAX_BATCH_RANK];  // 0 where A is broadcast
uniform int b_batch_strides[MAX_BATCH_RANK];

// Element offsets of A's and B's matrices of batch `batch`: from the broadcast strides
// (BROADCAST), else the matrices one after the other.
ivec2 batch_bases(int batch) {
    int a_base = a_off, b_base = b_off;
#if BROADCAST
    int rem = batch;
    for (int d = batch_rank - 1; d >= 0; --d) {
        int coord = rem % batch_shape[d];
        rem /= batch_shape[d];
        a_base += coord * a_batch_strides[d];
        b_base += coord * b_batch_strides[d];
    }
#else
    a_base += batch * M * K;
    b_base += batch * K * N;
#endif
    return ivec2(a_base, b_base);
}

vec4 act4(vec4 v) { return vec4(ACT(v.x), ACT(v.y), ACT(v.z), ACT(v.w)); }
