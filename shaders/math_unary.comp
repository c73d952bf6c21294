#version 430
// y = FN(x), elementwise: the keras.ops maths that are not activations (floor, erf, log1p...).
// FN names a function below; activations.glsl lends the shared helpers (erf_approx, expm1_accurate).
#include "common.glsl"
#include "activations.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform uint n;

float math_floor(float v) { return floor(v); }
float math_ceil(float v) { return ceil(v); }
// numpy / jnp.round: halves go to the even neighbour.
float math_round(float v) { return roundEven(v); }
float math_sign(float v) { return isnan(v) ? v : sign(v); }
float math_reciprocal(float v) { return 1.0 / v; }
float math_rsqrt(float v) { return inversesqrt(v); }
float math_erf(float v) { return erf_approx(v); }
float math_expm1(float v) { return expm1_accurate(v); }
// log(1 + v) without the cancellation of 1 + v for small v (Goldberg's correction).
float math_log1p(float v) {
    float u = 1.0 + v;
    if (u == 1.0) return v;
    if (isinf(u)) return u;
    return log(u) * v / (u - 1.0);
}

void main() {
    uint i = linear_index();
    if (i >= n) return;
    y[i] = FN(x[i]);
}
