#version 430
// Per-channel maps, the channel of element i being (i / inner) % channels:
//   MODE_AFFINE: y = x * scale[c] + shift[c]   (inference BatchNormalization, Rescaling, ...)
//   MODE 1:      y = max(x, 0) - scale[c] * max(-x, 0)   (PReLU as Keras computes it)
//   MODE 2:      y = (x - shift[c]) / scale[c]            (Normalization: (x - mean) / std)
//   MODE 3:      y = shift[c] + x * scale[c]              (Normalization with invert=True)
// Defines: MODE, HAS_SHIFT (mode 0), X_INT (the input is int32; it is converted to float).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#if X_INT
layout(std430, binding = 0) readonly buffer X { int x[]; };   // int32 input, cast as Keras does
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#endif
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
    float v = float(x[i]);
#if MODE == 1
    y[i] = max(v, 0.0) - scale[c] * max(-v, 0.0);
#elif MODE == 2
    y[i] = (v - shift[c]) / scale[c];
#elif MODE == 3
    y[i] = shift[c] + v * scale[c];
#else
    v = v * scale[c];
#if HAS_SHIFT
    v += shift[c];
#endif
    y[i] = v;
#endif
}
