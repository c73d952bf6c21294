#version 430
// c = OP(a, b) elementwise over 32-bit words with numpy broadcasting (kerasgl/ops/bitwise.py):
// bitwise and / or / xor, shifts, gcd / lcm of int32 (bool as 0 / 1), and isclose / angle of
// float32 words. Each op_* takes the two operands' words and returns the result's word.
// Defines: OP; A_SCALAR / B_SCALAR (the operand is the uniform word a_word / b_word);
// BROADCAST (a_strides / b_strides over out_shape, as typed_binary.comp).
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#define MAX_RANK 8
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer C { uint c[]; };
uniform uint n;
uniform int rank;
uniform int out_shape[MAX_RANK];
uniform int a_strides[MAX_RANK];
uniform int b_strides[MAX_RANK];
uniform uint a_word;
uniform uint b_word;
uniform float rtol;
uniform float atol;
uniform int equal_nan;

#define MAGNITUDE(w) ((w) & 0x7fffffffu)
bool is_nan(uint w) { return MAGNITUDE(w) > 0x7f800000u; }
bool is_inf(uint w) { return MAGNITUDE(w) == 0x7f800000u; }

uint op_and(uint x, uint y) { return x & y; }
uint op_or(uint x, uint y) { return x | y; }
uint op_xor(uint x, uint y) { return x ^ y; }
// XLA: a shift by a count outside [0, 32) gives 0 (left) or the sign's fill (arithmetic right).
uint op_shl(uint x, uint y) { return y >= 32u ? 0u : x << y; }
uint op_shr(uint x, uint y) {
    int v = int(x);
    return uint(y >= 32u ? (v < 0 ? -1 : 0) : v >> int(y));
}
int trunc_rem(int x, int y) { return x - (x / y) * y; }
// jnp.gcd: Euclid on the absolute values, the pair kept ordered after each step.
int gcd_of(int x, int y) {
    int p = abs(x), q = abs(y);
    for (int k = 0; k < 64 && q != 0; ++k) {
        int p2 = q, q2 = trunc_rem(p, q);
        p = p2 < q2 ? q2 : p2;
        q = p2 < q2 ? p2 : q2;
    }
    return p;
}
uint op_gcd(uint x, uint y) { return uint(gcd_of(int(x), int(y))); }
// jnp.lcm: |x| * (|y| // gcd) (wrapping as int32), 0 where the gcd is 0.
uint op_lcm(uint x, uint y) {
    int d = gcd_of(int(x), int(y));
    if (d == 0) return 0u;
    return uint(abs(int(x)) * (abs(int(y)) / d));
}
// jnp.isclose of floats: |x - y| <= atol + rtol * |y|; infinities close only to themselves;
// NaN close to nothing (to NaN with equal_nan).
uint op_isclose(uint wx, uint wy) {
    float x = uintBitsToFloat(wx), y = uintBitsToFloat(wy);
    bool nan_x = is_nan(wx), nan_y = is_nan(wy);
    if (nan_x || nan_y) return (equal_nan != 0 && nan_x && nan_y) ? 1u : 0u;
    if (is_inf(wx) || is_inf(wy)) return wx == wy ? 1u : 0u;
    return abs(x - y) <= atol + rtol * abs(y) ? 1u : 0u;
}
// jnp.angle of a real x: arctan2(0, x): pi where the sign bit is set (-0.0 too), NaN kept.
uint op_angle(uint wx, uint wy) {
    if (is_nan(wx)) return wx;
    return floatBitsToUint((wx >> 31) != 0u ? 3.14159265358979 : 0.0);
}

void main() {
    uint i = linear_index();
    if (i >= n) return;
    int ia = int(i), ib = int(i);
#if BROADCAST
    int rem = int(i);
    ia = 0; ib = 0;
    for (int d = rank - 1; d >= 0; --d) {
        int coord = rem % out_shape[d];
        rem /= out_shape[d];
        ia += coord * a_strides[d];
        ib += coord * b_strides[d];
    }
#endif
#if A_SCALAR
    uint wa = a_word;
#else
    uint wa = a[ia];
#endif
#if B_SCALAR
    uint wb = b_word;
#else
    uint wb = b[ib];
#endif
    c[i] = OP(wa, wb);
}
