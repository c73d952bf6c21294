#version 430
// keras.ops.sparsemax along one axis, Keras 3's JAX formula: with z sorted in descending order and
// c its running sum, position k is in the support when z_k - (c_k - 1) / k > 0; K counts the
// support and tau = (sum of c_k over the support - 1) / K; y = max(x - tau, 0). The tensor is seen
// as (outer, len, inner); one invocation per line finds each element's sorted position (ties in
// index order) by counting, so no sort is needed.
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
    float support_sum = 0.0;
    float support = 0.0;
    for (uint a = 0u; a < len; ++a) {
        float za = x[base + a * inner];
        float before = 0.0, above = 0.0;        // elements sorted ahead of a, and their sum
        for (uint b = 0u; b < len; ++b) {
            float zb = x[base + b * inner];
            if (zb > za || (zb == za && b < a)) { before += 1.0; above += zb; }
        }
        float k = before + 1.0, c = above + za;
        if (za - (c - 1.0) / k > 0.0) { support += 1.0; support_sum += c; }
    }
    float tau = (support_sum - 1.0) / support;
    for (uint a = 0u; a < len; ++a) {
        uint at = base + a * inner;
        float d = x[at] - tau;
        y[at] = isnan(d) ? d : max(d, 0.0);
    }
}
