// Accurate float32 building blocks for keras.ops maths that GLSL lacks or computes loosely
// (trigonometry of large arguments, log1p, erfc, erfinv, I0), shared by math_extra.comp and the
// binary_* functions below (included by binary.comp and binary_vec4.comp).
// Written for a few ulps over the whole float32 range the tests probe, NaN in: NaN out.
// Names start with mx_ (no clash with activations.glsl, which fused kernels also include).

#define MX_NAN uintBitsToFloat(0x7fc00000u)
#define MX_INF uintBitsToFloat(0x7f800000u)
#define MX_PI 3.14159265358979
#define MX_PI_2 1.57079632679490

bool mx_signbit(float v) { return (floatBitsToUint(v) >> 31) != 0u; }

// log(1 + v) without the cancellation of 1 + v for small v (Goldberg's correction).
float mx_log1p(float v) {
    precise float u = 1.0 + v;
    if (u == 1.0) return v;
    if (isinf(u)) return u;
    precise float d = u - 1.0;
    return log(u) * (v / d);
}

// The bits of 2/pi after the binary point, behind one word of zeros (Payne-Hanek's table).
const uint MX_TWO_OVER_PI[8] = uint[8](0u, 0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u,
                                       0xDB629599u, 0x3C439041u, 0xFE5163ABu);
uint mx_bits_at(int g, int b) {     // 32 bits of the table from bit g = 32 * word + b
    uint hi = MX_TWO_OVER_PI[g >> 5] << b;
    return b == 0 ? hi : hi | (MX_TWO_OVER_PI[(g >> 5) + 1] >> (32 - b));
}
// Payne-Hanek for |x| >= 2^15: x = m * 2^e (m the 24-bit integer mantissa); the product of m with
// 96 bits of 2/pi from bit e - 1 on, modulo 2^96, is x * 2/pi modulo 4 in fixed point (2 integer
// bits, 94 fraction bits). Exact in integers: right for every float32.
int mx_reduce_large(float x, out float r) {
    uint u = floatBitsToUint(abs(x));
    uint m = (u & 0x7FFFFFu) | 0x800000u;
    int e = int(u >> 23) - 150;
    int g = e + 30;                  // table bit of 2/pi's bit e - 1
    uint w0 = mx_bits_at(g, g & 31), w1 = mx_bits_at(g + 32, g & 31);
    uint w2 = mx_bits_at(g + 64, g & 31);
    uint h2, l2, h1, l1, h0, l0;
    umulExtended(m, w2, h2, l2);
    umulExtended(m, w1, h1, l1);
    umulExtended(m, w0, h0, l0);
    uint v2 = l2, v1 = l1 + h2;
    uint v0 = l0 + h1 + (v1 < l1 ? 1u : 0u);
    int k = int(v0 >> 30);
    uint f0 = v0 & 0x3FFFFFFFu;
    float sgn = 1.0;
    if ((f0 & 0x20000000u) != 0u) {  // fraction >= 1/2: the next multiple, from below
        k += 1;
        sgn = -1.0;
        v2 = ~v2 + 1u;
        v1 = ~v1 + (v2 == 0u ? 1u : 0u);
        f0 = (~f0 + (v1 == 0u && v2 == 0u ? 1u : 0u)) & 0x3FFFFFFFu;
    }
    float f = float(f0) * 9.313225746154785e-10 + float(v1) * 2.168404344971009e-19
              + float(v2) * 5.048709793414476e-29;
    r = sgn * f * 1.5707963267948966;
    if (x < 0.0) { r = -r; k = -k; }
    return k & 3;
}
// x = k * pi/2 + r with |r| <= pi/4; returns k mod 4. Below 2^15 Cody-Waite: pi/2 in three 8-bit
// parts (k * part exact for |k| < 2^16) and a float32 rest. GPU sin / cos lose digits here.
int mx_reduce(float x, out float r) {
    if (isnan(x) || isinf(x)) { r = MX_NAN; return 0; }
    if (abs(x) >= 32768.0) return mx_reduce_large(x, r);
    precise float k = roundEven(x * 0.636619772367581);
    precise float t = x - k * 1.5703125;
    t = t - k * 4.825592041015625e-4;
    t = t - k * 1.2665987014770508e-6;
    t = t - k * 9.92093629470503e-10;
    r = t;
    return int(mod(k, 4.0));
}
// sin / cos of |r| <= pi/4 (Cephes sinf / cosf minimax polynomials).
float mx_sin_r(float r) {
    float z = r * r;
    return ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
}
float mx_cos_r(float r) {
    float z = r * r;
    return ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z
           - 0.5 * z + 1.0;
}
float mx_sin(float x) {
    float r;
    int q = mx_reduce(x, r);
    float v = (q & 1) == 0 ? mx_sin_r(r) : mx_cos_r(r);
    return q >= 2 ? -v : v;
}
float mx_cos(float x) {
    float r;
    int q = mx_reduce(x, r);
    float v = (q & 1) == 0 ? mx_cos_r(r) : mx_sin_r(r);
    return (q == 1 || q == 2) ? -v : v;
}
// atan of v >= 0 (Cephes atanf: reduced to |t| <= tan(pi/8)).
float mx_atan_pos(float v) {
    float base = 0.0;
    if (v > 2.414213562373095) { base = MX_PI_2; v = -1.0 / v; }
    else if (v > 0.4142135623730950) { base = 0.25 * MX_PI; v = (v - 1.0) / (v + 1.0); }
    float z = v * v;
    return base + (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z
                   - 3.33329491539e-1) * z * v + v;
}
// asin's polynomial for s in [0, 0.5], z = s * s (Cephes asinf).
float mx_asin_poly(float s, float z) {
    return ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z
             + 7.4953002686e-2) * z + 1.6666752422e-1) * z * s + s;
}
// erfc(z) for z >= 0, relative error < 1.2e-7 (Numerical Recipes' Chebyshev fit).
float mx_erfc_pos(float z) {
    float t = 1.0 / (1.0 + 0.5 * z);
    return t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
           t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
           t * (-0.82215223 + t * 0.17087277)))))))));
}

// ------------------------------------------------------------------------------------------------
// Binary functions (binary.comp / binary_vec4.comp OP=binary_<name>), jnp's definitions.
// ------------------------------------------------------------------------------------------------
float binary_arctan2(float y, float x) {
    if (isnan(x) || isnan(y)) return x + y;
    float ax = abs(x), ay = abs(y), a;
    if (isinf(ax) && isinf(ay)) a = 0.25 * MX_PI;
    else if (ay > ax) a = MX_PI_2 - mx_atan_pos(ax / ay);
    else a = ax == 0.0 ? 0.0 : mx_atan_pos(ay / ax);
    if (mx_signbit(x)) a = MX_PI - a;
    return mx_signbit(y) ? -a : a;
}
float binary_hypot(float x, float y) {
    x = abs(x); y = abs(y);
    if (isinf(x) || isinf(y)) return MX_INF;
    if (isnan(x) || isnan(y)) return x + y;
    float big = max(x, y), small = min(x, y);
    if (big == 0.0) return 0.0;
    float q = small / big;
    return big * sqrt(1.0 + q * q);
}
float binary_logaddexp(float x, float y) {
    float d = x - y;
    if (isnan(d)) return x + y;
    return max(x, y) + mx_log1p(exp(-abs(d)));
}
float binary_logaddexp2(float x, float y) {
    float d = x - y;
    if (isnan(d)) return x + y;
    return max(x, y) + 1.44269504088896 * mx_log1p(exp2(-abs(d)));
}
// C fmod (the sign of x), exact as C's: the mantissas' remainder by integer long division, 8 bits
// a step (a subnormal operand: the float formula, right while x / y is below 2^24).
float binary_fmod(float x, float y) {
    if (isnan(x) || isnan(y) || isinf(x) || y == 0.0) return MX_NAN;
    float ax = abs(x), ay = abs(y), r;
    if (isinf(y) || ax < ay) return x;
    uint ux = floatBitsToUint(ax), uy = floatBitsToUint(ay);
    int ex = int(ux >> 23), ey = int(uy >> 23);
    if (ey == 0) {
        precise float t = ax - trunc(ax / ay) * ay;
        r = t < 0.0 ? t + ay : (t >= ay ? t - ay : t);
    } else {
        uint my = (uy & 0x7FFFFFu) | 0x800000u;
        uint rem = ((ux & 0x7FFFFFu) | 0x800000u) % my;
        int d = ex - ey;
        for (; d >= 8; d -= 8) rem = (rem << 8) % my;
        rem = (rem << d) % my;
        r = ldexp(float(rem), ey - 150);
    }
    return mx_signbit(x) ? -r : r;
}
// numpy remainder: the sign of y.
float binary_mod(float x, float y) {
    float r = binary_fmod(x, y);
    return r != 0.0 && !isnan(r) && (r < 0.0) != (y < 0.0) ? r + y : r;
}
// jnp.floor_divide of floats (CPython's float_divmod).
float binary_floor_divide(float x, float y) {
    float m = binary_fmod(x, y);
    float q = (y == 0.0 ? x : x - m) / y;
    if (isnan(m) || (m != 0.0 && (m < 0.0) != (y < 0.0))) q -= 1.0;
    return q >= 0.0 ? floor(q + 0.5) : ceil(q - 0.5);
}
float binary_heaviside(float x, float y) {
    return x < 0.0 ? 0.0 : (x > 0.0 ? 1.0 : (isnan(x) ? x : y));
}
float binary_divide_no_nan(float x, float y) { return y == 0.0 ? 0.0 : x / y; }
float binary_fmax(float x, float y) { return x > y || isnan(y) ? x : y; }
float binary_fmin(float x, float y) { return x < y || isnan(y) ? x : y; }
// x * 2^e, e an integer (as a float): exact powers of two, in three steps past the exponent range.
float mx_pow2(float e) { return uintBitsToFloat(uint(int(e) + 127) << 23); }
float binary_ldexp(float x, float e) {
    e = clamp(e, -378.0, 381.0);      // beyond: 0 or inf for every float32 x
    float e1 = clamp(e, -126.0, 127.0), e2 = clamp(e - e1, -126.0, 127.0);
    precise float y = x * mx_pow2(e1);
    y = y * mx_pow2(e2);
    return y * mx_pow2(e - e1 - e2);
}
float binary_nextafter(float x, float y) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == y) return y;
    if (x == 0.0) return uintBitsToFloat(y > 0.0 ? 1u : 0x80000001u);
    int bits = floatBitsToInt(x);
    return intBitsToFloat(bits + ((y > x) == (x > 0.0) ? 1 : -1));
}
