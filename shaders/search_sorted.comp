#version 430
// jnp.searchsorted (side left, or RIGHT) and, with DIGITIZE, jnp.digitize (side right, bins
// increasing or decreasing) of float32 values in a 1-D sequence: the same binary search of
// `levels` halvings jax runs, on jnp.sort's order (-0 equals +0, NaN above +inf), so an unsorted
// sequence gives jax's answer too. The sequence is a buffer (SEQ_BUFFER) or a uniform array.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer V { float v[]; };
#if SEQ_BUFFER
layout(std430, binding = 1) readonly buffer S { float seq[]; };
layout(std430, binding = 2) writeonly buffer Y { int y[]; };
#else
layout(std430, binding = 1) writeonly buffer Y { int y[]; };
uniform float seq[MAX_SEQ];
#endif
uniform uint n;
uniform uint seq_len;
uniform int levels;

int sort_key(float f) {
    int b = floatBitsToInt(f);
    if ((b & 0x7fffffff) > 0x7f800000) b = 0x7fc00000;
    if (b == int(0x80000000u)) b = 0;
    return b < 0 ? b ^ 0x7fffffff : b;
}

uint search(int query, bool reversed) {
    uint low = 0u, high = seq_len;
    for (int l = 0; l < levels; ++l) {
        uint mid = low + (high - low) / 2u;
        int key = sort_key(seq[reversed ? seq_len - 1u - mid : mid]);
#if RIGHT
        bool go_left = query < key;
#else
        bool go_left = query <= key;
#endif
        if (go_left) high = mid; else low = mid;
    }
    return high;
}

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int query = sort_key(v[i]);
#if DIGITIZE
    bool increasing = seq[seq_len - 1u] >= seq[0];
    y[i] = int(increasing ? search(query, false) : seq_len - search(query, true));
#else
    y[i] = int(search(query, false));
#endif
}
