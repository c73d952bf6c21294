#version 430
// Reductions reduce.comp does not do (products, NaN-ignoring statistics, counts, NaN-ignoring
// argmax / argmin), one invocation per output: the tensor is seen as (outer, len, inner) and each
// invocation walks one (outer, inner) line in order.
// OP: 0 prod, 1 nansum, 2 nanmax, 3 nanmin, 4 nanprod, 5 count_nonzero (int32), 6 nanmean,
// 7 nanargmax (int32, -1 when all NaN), 8 nanargmin (int32).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
#if OP == 5 || OP == 7 || OP == 8
layout(std430, binding = 1) writeonly buffer Y { int y[]; };
#else
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#endif
uniform uint lines;                 // outer * inner
uniform uint len;
uniform uint inner;

void main() {
    uint i = linear_index();
    if (i >= lines) return;
    uint at = (i / inner) * len * inner + i % inner;
#if OP == 0 || OP == 4
    float acc = 1.0;
#elif OP == 2 || OP == 3
    float acc = uintBitsToFloat(0x7fc00000u);
#else
    float acc = 0.0;
#endif
    int count = 0, best = -1;
    for (uint k = 0u; k < len; ++k, at += inner) {
        float v = x[at];
#if OP == 0
        acc *= v;
#elif OP == 1
        if (!isnan(v)) acc += v;
#elif OP == 2
        if (!isnan(v) && (isnan(acc) || v > acc)) acc = v;
#elif OP == 3
        if (!isnan(v) && (isnan(acc) || v < acc)) acc = v;
#elif OP == 4
        if (!isnan(v)) acc *= v;
#elif OP == 5
        if (v != 0.0 || isnan(v)) count += 1;
#elif OP == 6
        if (!isnan(v)) { acc += v; count += 1; }
#elif OP == 7
        if (!isnan(v) && (best < 0 || v > acc)) { acc = v; best = int(k); }
#elif OP == 8
        if (!isnan(v) && (best < 0 || v < acc)) { acc = v; best = int(k); }
#endif
    }
#if OP == 5
    y[i] = count;
#elif OP == 6
    y[i] = acc / float(count);
#elif OP == 7 || OP == 8
    y[i] = best;
#else
    y[i] = acc;
#endif
}
