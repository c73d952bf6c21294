#version 430
// Per-channel maps, the channel of element i being (i / inner) % channels:
//   MODE_AFFINE: y = x * scale[c] + shift[c]   (inference BatchNormalization, Rescaling, ...)
//   MODE_PRELU:  y = max(x, 0) - scale[c] * max(-x, 0)   (PReLU as Keras computes it)
// Defines: MODE (0 affine, 1 prelu), HAS_SHIFT.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Scale { float scale[]; };
layout(std430, binding = 2) readonly buffer Shift { float shift[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
uniform uint n;
uniform uint inner;
uniform uint channels;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint c = (i / inner) % channels;
    float v = x[i];
#if MODE == 1
    y[i] = max(v, 0.0) - scale[c] * max(-v, 0.0);
#else
    v = v * scale[c];
#if HAS_SHIFT
    v += shift[c];
#endif
    y[i] = v;
#endif
}
