#version 430
// Layer normalization over a set of axes, in Keras's order of operations:
//   mean, var = moments(x); inv = rsqrt(var + eps) * gamma; y = x * inv + (beta - mean * inv)
// RMS_SCALING (Keras 3's deprecated rms_scaling=True): y = x * rsqrt(var + eps) * gamma, with
// the *centered* variance and no mean subtracted, exactly as Keras computes it.
// gamma / beta are indexed by the flat reduced index r (C order over the normalised axes), which
// is how Keras reshapes them. Defines: HAS_GAMMA, HAS_BETA, RMS_SCALING, RED_GROUPS.
#include "common.glsl"
#include "axis_groups.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Gamma { float gamma[]; };
layout(std430, binding = 2) readonly buffer Beta { float beta[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
uniform int n_outer;
uniform float epsilon;

void main() {
    int outer = int(linear_index());
    if (outer >= n_outer) return;
    int base = kept_offset(outer);
    // Two passes (mean, then squared deviations), compensated sums: as jnp.var, not E[x^2]-E[x]^2.
    // A variance that overflows float32 is inf (rsqrt: 0), as in Keras; NaN in the row: NaN.
    float sum = 0.0, comp = 0.0;
    for (int r = 0; r < red_len; ++r) {
        float term = x[base + reduced_offset(r)] - comp;
        float t = sum + term;
        comp = isinf(t) ? 0.0 : (t - sum) - term;   // an overflow stays inf, not inf - inf
        sum = t;
    }
    float mean = sum / float(red_len);
    sum = 0.0; comp = 0.0;
    for (int r = 0; r < red_len; ++r) {
        float d = x[base + reduced_offset(r)] - mean;
        float term = d * d - comp;
        float t = sum + term;
        comp = isinf(t) ? 0.0 : (t - sum) - term;   // an overflow stays inf, not inf - inf
        sum = t;
    }
    float inv_std = inversesqrt(sum / float(red_len) + epsilon);
    for (int r = 0; r < red_len; ++r) {
        int i = base + reduced_offset(r);
#if RMS_SCALING
        float v = x[i] * inv_std;
#if HAS_GAMMA
        v *= gamma[r];
#endif
        y[i] = v;
#else
        float inv = inv_std;
#if HAS_GAMMA
        inv *= gamma[r];
#endif
        float res = -mean * inv;
#if HAS_BETA
        res += beta[r];
#endif
        y[i] = x[i] * inv + res;
#endif
    }
}
