#version 430
// Quantiles of rows sorted by shaders/sort_rank.comp (NaNs last), as jnp.quantile computes them:
// position q * (count - 1), its floor and ceil clamped to the row, and METHOD 0 linear,
// 1 lower, 2 higher, 3 midpoint, 4 nearest (the low value while the high weight is <= 0.5).
// Without SKIP_NAN a row holding a NaN gives NaN; with it (nanquantile) count is the number of
// values that are not NaN. One invocation per (q, row); the output is (quantiles, rows).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer S { float s[]; };
#if Q_BUFFER
layout(std430, binding = 1) readonly buffer Q { float qv[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
#else
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform float qs[MAX_Q];
#endif
uniform uint rows;
uniform uint len;
uniform uint nq;
uniform float q_divisor;   // 100 for a percentile read from a tensor, else 1

void main() {
    uint i = linear_index();
    if (i >= nq * rows) return;
    uint qi = i / rows;
    uint base = (i % rows) * len;
#if Q_BUFFER
    float q = qv[qi] / q_divisor;
#else
    float q = qs[qi];
#endif
    uint c = len;
    while (c > 0u && isnan(s[base + c - 1u])) --c;
#if !SKIP_NAN
    if (c < len) { y[i] = s[base + len - 1u]; return; }
#endif
    float count = float(c);
    float pos = q * (count - 1.0);
    float low = floor(pos);
    float high = ceil(pos);
    float high_weight = pos - low;
    float low_weight = 1.0 - high_weight;
    low = max(0.0, min(low, count - 1.0));
    high = max(0.0, min(high, count - 1.0));
    float lv = s[base + uint(low)];
    float hv = s[base + uint(high)];
#if METHOD == 0
    y[i] = lv * low_weight + hv * high_weight;
#elif METHOD == 1
    y[i] = lv;
#elif METHOD == 2
    y[i] = hv;
#elif METHOD == 3
    y[i] = (lv + hv) * 0.5;
#else
    y[i] = high_weight <= 0.5 ? lv : hv;
#endif
}
