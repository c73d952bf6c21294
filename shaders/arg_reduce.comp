#version 430
// The index of the largest (ARG_MIN: smallest) value along one axis, as int32: the tensor is seen
// as (outer, length, inner); each invocation walks one (outer, inner) line. The first of equal
// values wins, and a NaN counts as the extreme (jnp.argmax / argmin).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { int y[]; };
uniform uint lines;                 // outer * inner
uniform uint len;
uniform uint inner;

void main() {
    uint i = linear_index();
    if (i >= lines) return;
    uint base = (i / inner) * len * inner + i % inner;
    float best = x[base];
    int at = 0;
    for (uint k = 1u; k < len && !isnan(best); ++k) {
        float v = x[base + k * inner];
#if ARG_MIN
        bool better = v < best || isnan(v);
#else
        bool better = v > best || isnan(v);
#endif
        if (better) { best = v; at = int(k); }
    }
    y[i] = at;
}
