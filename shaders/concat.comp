#version 430
// Copy one input, seen as [outer, len, inner], into its slice of the output [outer, total, inner]
// starting at `offset` along the middle axis (one dispatch per input of a concatenation). x and
// y are buffers, or textures read and written in place (X_TEXTURE / Y_TEXTURE:
// texture_operand.glsl), a float16-activation model's DenseNet blocks among them.
#include "common.glsl"
#include "texture_operand.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#ifdef X_TEXTURE
TEXTURE_OPERAND(x_texture, 0, TEXEL_FORMAT_0);
#define LOAD_X(i) TEXEL(x_texture, i)
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#define LOAD_X(i) x[i]
#endif
#ifdef Y_TEXTURE
TEXTURE_RESULT(y_texture, 1, TEXEL_FORMAT_1);
#define STORE_Y(i, v) STORE_TEXEL(y_texture, i, v)
#else
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#define STORE_Y(i, v) y[i] = (v)
#endif
uniform uint n;          // elements of the input
uniform uint slice;      // len * inner: one outer step of the input
uniform uint out_slice;  // total * inner: one outer step of the output
uniform uint offset;     // offset * inner

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint o = i / slice;
    STORE_Y(o * out_slice + offset + (i - o * slice), LOAD_X(i));
}
