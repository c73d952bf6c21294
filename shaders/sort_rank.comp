#version 430
// Rank sort along one axis (keras.ops.sort / argsort / top_k / argpartition): the tensor is seen
// as (outer, len, inner) and each invocation owns one element: its rank is the number of elements
// of its line that come before it (smaller keys, or equal keys at lower indices: a stable sort),
// and it writes its value and its index there. O(len) per element, exact, no shared memory.
// Keys are integers built from the float's bits, so no comparison meets a NaN:
//   ORDER 0: jnp.sort's order: -0 equals +0, every NaN is one value above +inf (sorted last);
//   ORDER 1: lax.top_k's total order, descending: -NaN < -inf < ... < -0 < +0 < ... < +NaN;
//   ORDER 2: lax.top_k of -x (jnp.argpartition's smallest entries), descending.
// STAGE 0 writes values (WRITE_VALUES) and indices (WRITE_INDICES) at ranks below `keep` (top_k
// keeps k); STAGE 1 writes each element's rank; STAGE 2 reads them back and places
// jnp.argpartition's indices: the kth+1 smallest by rank, then the others in index order.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#if INT_INPUT
layout(std430, binding = 0) readonly buffer X { int x[]; };
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#endif
#if STAGE == 1
layout(std430, binding = 1) writeonly buffer R { int ranks[]; };
#elif STAGE == 2
layout(std430, binding = 1) readonly buffer R { int ranks[]; };
layout(std430, binding = 2) writeonly buffer I { int indices[]; };
#else
#if WRITE_VALUES
#if INT_INPUT
layout(std430, binding = 1) writeonly buffer V { int values[]; };
#else
layout(std430, binding = 1) writeonly buffer V { float values[]; };
#endif
#endif
#if WRITE_INDICES
layout(std430, binding = INDEX_BINDING) writeonly buffer I { int indices[]; };
#endif
#endif
uniform uint n;          // outer * len * inner
uniform uint len;
uniform uint inner;
uniform uint keep;       // the output's length along the axis (len, or top_k's k)
uniform int kth;

int key_at(uint at) {
#if INT_INPUT
#if ORDER == 2
    return -x[at];
#else
    return x[at];
#endif
#else
    int b = floatBitsToInt(x[at]);
#if ORDER == 0
    if ((b & 0x7fffffff) > 0x7f800000) b = 0x7fc00000;
    if (b == int(0x80000000u)) b = 0;
#elif ORDER == 2
    b ^= int(0x80000000u);
#endif
    return b < 0 ? b ^ 0x7fffffff : b;
#endif
}

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint k = (i / inner) % len;
    uint in_line = i % inner;
    uint outer = i / (len * inner);
    uint base = outer * len * inner + in_line;
#if STAGE == 2
    int r = ranks[i];
    uint pos = uint(r);
    if (r > kth) {
        uint later = 0u;
        for (uint j = 0u; j < k; ++j) later += uint(ranks[base + j * inner] > kth);
        pos = uint(kth) + 1u + later;
    }
    indices[base + pos * inner] = int(k);
#else
    int key = key_at(i);
    uint r = 0u;
    for (uint j = 0u; j < len; ++j) {
        int other = key_at(base + j * inner);
#if ORDER == 0
        r += uint(other < key || (other == key && j < k));
#else
        r += uint(other > key || (other == key && j < k));
#endif
    }
#if STAGE == 1
    ranks[i] = int(r);
#else
    if (r >= keep) return;
    uint at = outer * keep * inner + r * inner + in_line;
#if WRITE_VALUES
    values[at] = x[i];
#endif
#if WRITE_INDICES
    indices[at] = int(k);
#endif
#endif
#endif
}
