#version 430
// Separable resampling along one axis (kerasgl/ops/resample_axis.py): x is seen as
// [outer, n_in, inner] and the output as [outer, n_out, inner]; output (o, k, i) is the weighted
// sum over j < span of weights[k * span + j] * x(o, starts[k] + j, i), the taps past the axis's
// end left out. Summed in j order from 0.0, as TensorFlow's scale_and_translate gathers its
// rows and columns (GatherRows / GatherColumns): a resize is one pass per axis.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer S { int starts[]; };
layout(std430, binding = 2) readonly buffer W { float weights[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
uniform uint n;
uniform uint inner;
uniform uint n_out;
uniform int n_in;
uniform int span;

void main() {
    uint idx = linear_index();
    if (idx >= n) return;
    uint i = idx % inner;
    uint t = idx / inner;
    uint k = t % n_out;
    uint o = t / n_out;
    int start = starts[k];
    int count = min(span, n_in - start);
    uint base = (o * uint(n_in) + uint(start)) * inner + i;
    uint w = k * uint(span);
    float acc = 0.0;
    for (int j = 0; j < count; ++j) {
        acc += weights[w + uint(j)] * x[base + uint(j) * inner];
    }
    y[idx] = acc;
}
