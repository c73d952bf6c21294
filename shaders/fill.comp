#version 430
// Every element = value (float or int bits, chosen by IS_INT).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#if IS_INT
layout(std430, binding = 0) writeonly buffer Y { int y[]; };
uniform int value;
#else
layout(std430, binding = 0) writeonly buffer Y { float y[]; };
uniform float value;
#endif
uniform uint n;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    y[i] = value;
}
