#version 430
// y = FN(x), elementwise: keras.ops's trigonometric, hyperbolic, logarithmic and special
// functions (jnp's definitions), built on math_extra.glsl. Parameters in p0..p2.
#include "common.glsl"
#include "math_extra.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
uniform uint n;
uniform float p0;
uniform float p1;
uniform float p2;

float fn_sin(float v) { return mx_sin(v); }
float fn_cos(float v) { return mx_cos(v); }
float fn_tan(float v) {
    float r;
    int q = mx_reduce(v, r);
    float s = mx_sin_r(r), c = mx_cos_r(r);
    return (q & 1) == 0 ? s / c : -c / s;
}
float fn_arcsin(float v) {
    float a = abs(v);
    if (a > 1.0) return MX_NAN;
    float p = a > 0.5 ? MX_PI_2 - 2.0 * mx_asin_poly(sqrt(0.5 - 0.5 * a), 0.5 - 0.5 * a)
                      : mx_asin_poly(a, a * a);
    return v < 0.0 ? -p : p;
}
float fn_arccos(float v) {
    if (abs(v) > 1.0) return MX_NAN;
    if (v > 0.5) { float z = 0.5 - 0.5 * v; return 2.0 * mx_asin_poly(sqrt(z), z); }
    if (v < -0.5) { float z = 0.5 + 0.5 * v; return MX_PI - 2.0 * mx_asin_poly(sqrt(z), z); }
    return MX_PI_2 - mx_asin_poly(v, v * v);
}
float fn_arctan(float v) { float a = mx_atan_pos(abs(v)); return v < 0.0 ? -a : a; }
// exp(|v| / 2) squared: no overflow before sinh / cosh themselves overflow (|v| > 89.4).
float fn_sinh(float v) {
    float a = abs(v), s;
    if (a <= 1.0) {
        float z = v * v;
        return ((2.03721912945e-4 * z + 8.33028376239e-3) * z + 1.66667160211e-1) * z * v + v;
    }
    float h = exp(0.5 * a);
    precise float half_h = 0.5 * h;
    s = half_h * h - 0.5 / (h * h);
    return v < 0.0 ? -s : s;
}
float fn_cosh(float v) {
    float h = exp(0.5 * abs(v));
    precise float half_h = 0.5 * h;
    return half_h * h + 0.5 / (h * h);
}
float fn_arcsinh(float v) {
    float a = abs(v);
    float r = a > 1e18 ? log(a) + 0.693147180559945
                       : mx_log1p(a + a * a / (1.0 + sqrt(1.0 + a * a)));
    return v < 0.0 ? -r : r;
}
float fn_arccosh(float v) {
    if (v < 1.0) return MX_NAN;
    if (v > 1e18) return log(v) + 0.693147180559945;
    float t = v - 1.0;
    return mx_log1p(t + sqrt(t * (t + 2.0)));
}
float fn_arctanh(float v) {
    float a = abs(v);
    if (a > 1.0) return MX_NAN;
    float r = 0.5 * mx_log1p(2.0 * a / (1.0 - a));
    return v < 0.0 ? -r : r;
}
float fn_log10(float v) { return log2(v) * 0.301029995663981; }
float fn_log2(float v) { return log2(v); }
float fn_exp2(float v) { return exp2(v); }
// pow's cube root polished by one Newton step (written so that y^3 cannot overflow).
float fn_cbrt(float v) {
    float a = abs(v);
    if (isnan(v) || isinf(v) || v == 0.0) return v;
    float r = pow(a, 1.0 / 3.0);
    if (r > 0.0 && !isinf(r)) r += (a / (r * r) - r) / 3.0;
    return v < 0.0 ? -r : r;
}
float fn_trunc(float v) { return trunc(v); }
float fn_fabs(float v) { return abs(v); }
// jnp.sinc: sin(t) / t of the float32 product t = pi * v.
float fn_sinc(float v) {
    precise float t = 3.14159265358979 * v;
    return v == 0.0 ? 1.0 : mx_sin(t) / t;
}
float fn_deg2rad(float v) { return v * 0.0174532925199433; }
float fn_rad2deg(float v) { return v * 57.2957795130823; }
// p0 replaces NaN, p1 +inf, p2 -inf.
float fn_nan_to_num(float v) { return isnan(v) ? p0 : (isinf(v) ? (v > 0.0 ? p1 : p2) : v); }
float fn_erfc(float v) { float r = mx_erfc_pos(abs(v)); return v < 0.0 ? 2.0 - r : r; }
// Giles' single-precision erfinv (the approximation XLA itself uses).
float fn_erfinv(float v) {
    if (abs(v) == 1.0) return v * MX_INF;
    float w = -log((1.0 - v) * (1.0 + v)), p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    }
    return p * v;
}
// Modified Bessel I0 (Abramowitz & Stegun 9.8.1-2, relative error < 2e-7); exp(|v|) overflows
// past 88.7 as jnp's i0e(v) * exp(|v|) does.
float fn_i0(float v) {
    float a = abs(v);
    if (a < 3.75) {
        float t = (v / 3.75) * (v / 3.75);
        return 1.0 + t * (3.5156229 + t * (3.0899424 + t * (1.2067492 + t * (0.2659732 +
               t * (0.0360768 + t * 0.0045813)))));
    }
    float t = 3.75 / a;
    float p = 0.39894228 + t * (0.01328592 + t * (0.00225319 + t * (-0.00157565 + t * (0.00916281
              + t * (-0.02057706 + t * (0.02635537 + t * (-0.01647633 + t * 0.00392377)))))));
    precise float scaled = p / sqrt(a);
    return scaled * exp(a);
}
// jnp.where(x > threshold, x, default_value): p0 = threshold, p1 = default value.
float fn_threshold(float v) { return v > p0 ? v : p1; }

void main() {
    uint i = linear_index();
    if (i >= n) return;
    y[i] = FN(x[i]);
}
