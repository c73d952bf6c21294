#version 430
// Running sums or products along one axis (keras.ops.cumsum / cumprod): the tensor is seen as
// (outer, length, inner); each invocation walks one (outer, inner) line in order, so the
// accumulation order is the sequential one.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform uint lines;                 // outer * inner
uniform uint len;
uniform uint inner;

void main() {
    uint i = linear_index();
    if (i >= lines) return;
    uint base = (i / inner) * len * inner + i % inner;
#if PRODUCT
    float acc = 1.0;
#else
    float acc = 0.0;
#endif
    for (uint k = 0u; k < len; ++k) {
        uint at = base + k * inner;
#if PRODUCT
        acc *= x[at];
#else
        acc += x[at];
#endif
        y[at] = acc;
    }
}
