#version 430
// y = ACT(x), elementwise. ACT names a function from activations.glsl. x and y are buffers, or
// textures read and written in place (X_TEXTURE / Y_TEXTURE: texture_operand.glsl).
#include "common.glsl"
#include "activations.glsl"
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
uniform uint n;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    STORE_Y(i, ACT(LOAD_X(i)));
}
