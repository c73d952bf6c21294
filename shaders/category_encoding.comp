#version 430
// y[b, r, c] = how many of x[b, 0..sample_len, r] equal the token c (MULTI_HOT: 1.0 where any
// does; WEIGHTED: the sum of the weights w[b, l, r] of the tokens equal to c, so that an infinite
// or NaN weight reaches its own token's sum only, as in Keras on JAX): Keras's "count" /
// "multi_hot" encodings, which reduce axis 1 of the int32 tokens x[b, l, r]. A token
// outside [0, depth) counts for nothing (jax.nn.one_hot gives it zeros).
// One invocation per output value.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { int x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#if WEIGHTED
layout(std430, binding = 2) readonly buffer W { float w[]; };
#endif
uniform uint n;            // outputs: batch * inner * depth
uniform uint depth;
uniform uint sample_len;   // the reduced axis
uniform uint inner;        // the values per position of the reduced axis

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint cell = i / depth;
    int token = int(i - cell * depth);
    uint b = cell / inner;
    uint r = cell - b * inner;
    uint at = b * sample_len * inner + r;
#if WEIGHTED
    float total = 0.0;
    for (uint l = 0u; l < sample_len; ++l) {
        uint k = at + l * inner;
        if (x[k] == token) total += w[k];
    }
    y[i] = total;
#else
    uint hits = 0u;
    for (uint l = 0u; l < sample_len; ++l) {
        hits += x[at + l * inner] == token ? 1u : 0u;
    }
#if MULTI_HOT
    y[i] = hits > 0u ? 1.0 : 0.0;
#else
    y[i] = float(hits);
#endif
#endif
}
