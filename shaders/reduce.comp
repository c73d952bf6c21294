#version 430
// One pass of a reduction. The input is seen as [outer, r, inner] (the reduced axes merged into r);
// invocation (o, c, i) reduces x[o, c*chunk : (c+1)*chunk, i] and writes y[o, c, i]. The caller
// repeats passes (with r = the number of chunks) until one chunk is left, so a long sum becomes a
// tree of short sums. Sums are compensated (Kahan), which keeps a sum of millions of float32
// numbers within a few ulps of the exact result.
// Defines: OP (0 sum, 1 max, 2 min); INT (1: int32 words, summed with int32 wrap-around as XLA's
// int32 sums, no compensation and no divisor).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#if INT
#define T int
#else
#define T float
#endif
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
uniform uint outer;
uniform uint r;
uniform uint inner;
uniform uint chunk;
uniform uint chunks;
uniform float divisor;   // the last pass of a mean divides by the element count; else 1

void main() {
    uint idx = linear_index();
    if (idx >= outer * chunks * inner) return;
    uint i = idx % inner;
    uint c = (idx / inner) % chunks;
    uint o = idx / (inner * chunks);
    uint begin = c * chunk;
    uint end = min(begin + chunk, r);
    uint at = (o * r + begin) * inner + i;
#if INT && OP == 0
    int result = 0;
    for (uint k = begin; k < end; ++k, at += inner) result += x[at];
#elif INT
    int result = x[at];
    at += inner;
    for (uint k = begin + 1u; k < end; ++k, at += inner)
        result = OP == 1 ? max(result, x[at]) : min(result, x[at]);
#elif OP == 0
    // `precise` stops the compiler from simplifying the compensation away.
    precise float sum = 0.0;
    precise float lost = 0.0;
    for (uint k = begin; k < end; ++k, at += inner) {
        precise float term = x[at] - lost;
        precise float next = sum + term;
        // Once the sum overflows it stays inf (as numpy's), not (inf - sum) - term = NaN later.
        lost = isinf(next) ? 0.0 : (next - sum) - term;
        sum = next;
    }
    float result = sum;
#else
    float result = x[at];
    at += inner;
    for (uint k = begin + 1u; k < end; ++k, at += inner) {
        float v = x[at];
#if OP == 1
        // NaN propagates, as in numpy.
        result = (v > result || isnan(v)) && !isnan(result) ? v : result;
#else
        result = (v < result || isnan(v)) && !isnan(result) ? v : result;
#endif
    }
#endif
#if INT
    y[idx] = result;
#else
    y[idx] = result / divisor;
#endif
}
