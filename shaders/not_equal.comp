#version 430
// y = (x != value) ? 1.0 : 0.0 elementwise: Keras masks (booleans) as float 0/1.
// INT_INPUT: x is int32 (token ids), compared with the integer `ivalue`.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#if INT_INPUT
layout(std430, binding = 0) readonly buffer X { int x[]; };
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#endif
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform uint n;
uniform float value;
uniform int ivalue;

void main() {
    uint i = linear_index();
    if (i >= n) return;
#if INT_INPUT
    y[i] = x[i] != ivalue ? 1.0 : 0.0;
#else
    y[i] = x[i] != value ? 1.0 : 0.0;
#endif
}
