#version 430
// y = x converted between float32 and int32 (TO_INT: truncated toward zero, as numpy's astype;
// else the int's float value).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#if TO_INT
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { int y[]; };
#else
layout(std430, binding = 0) readonly buffer X { int x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#endif
uniform uint n;

void main() {
    uint i = linear_index();
    if (i >= n) return;
#if TO_INT
    y[i] = int(x[i]);
#else
    y[i] = float(x[i]);
#endif
}
