#version 430
// Rotary position embedding (RoFormer), as KerasHub's RotaryEmbedding applies it to queries and
// keys of shape (batch, tokens, heads, depth): with the depth's halves x1 = x[:D/2] and
// x2 = x[D/2:], y = x * cos + concat(-x2, x1) * sin, where cos and sin (tokens, depth) hold the
// angles of each token's position (computed on the CPU).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Cos { float cos_t[]; };
layout(std430, binding = 2) readonly buffer Sin { float sin_t[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
uniform uint n;         // batch * tokens * heads * depth
uniform uint tokens;
uniform uint heads;
uniform uint depth;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    uint h = i % depth;
    uint t = (i / (depth * heads)) % tokens;
    uint half_depth = depth / 2u;
    float rotated = h < half_depth ? -x[i + half_depth] : x[i - half_depth];
    uint angle = t * depth + h;
    y[i] = x[i] * cos_t[angle] + rotated * sin_t[angle];
}
