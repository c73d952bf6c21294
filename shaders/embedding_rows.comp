#version 430
// out[i, :] = table[idx[i], :] (Embedding lookup). Negative indices in [-V, -1] count from the end
// (as numpy and jnp.take do); any other index outside [0, V) gives a row of NaN (as Keras on JAX
// gives) and, with CHECK, is counted in `flags` so the caller can raise a clear error.
// Defines: IDX_FLOAT (indices stored as float32, truncated toward zero as a cast to int32 does),
// CHECK. One invocation per output element.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
// The table through half_weights.glsl: float32, or float16 (WEIGHTS_F16: load_model's
// storage_dtype) unpacked to float32 as read.
#define W_BINDING 0
#define W_IMAGE 0
#define W_VEC4 0
#include "half_weights.glsl"
#if IDX_FLOAT
layout(std430, binding = 1) readonly buffer Idx { float idx[]; };
#else
layout(std430, binding = 1) readonly buffer Idx { int idx[]; };
#endif
layout(std430, binding = 2) writeonly buffer Out { float outv[]; };
layout(std430, binding = 3) buffer Flags { int flags[]; };   // [count of bad indices, one of them]
uniform uint n;
uniform int rows;
uniform int dim;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int pos = int(i) / dim;
    int col = int(i) - pos * dim;
    int row = int(idx[pos]);
    if (row < 0) row += rows;
    if (row < 0 || row >= rows) {
        outv[i] = uintBitsToFloat(0x7fc00000u);   // NaN
#if CHECK
        if (col == 0) {
            atomicAdd(flags[0], 1);
            atomicExchange(flags[1], int(idx[pos]));
        }
#endif
        return;
    }
    outv[i] = load_w(row * dim + col);
}
