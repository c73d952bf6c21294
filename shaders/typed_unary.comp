#version 430
// y = OP(x) elementwise over 32-bit words (kerasgl/ops/typed.py): casts between float32, int32
// and bool, int32 arithmetic, logical not, and the float classifications (isnan, ...), each an
// op_* function from a word to a word. NaN and infinity are told by their bits, not isnan().
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
uniform uint n;

#define MAGNITUDE(w) ((w) & 0x7fffffffu)
#define WORD(b) ((b) ? 1u : 0u)
bool is_nan(uint w) { return MAGNITUDE(w) > 0x7f800000u; }
bool is_inf(uint w) { return MAGNITUDE(w) == 0x7f800000u; }
// float32 -> int32 as XLA converts: toward zero, saturating, NaN -> 0.
uint op_float_to_int(uint w) {
    float v = uintBitsToFloat(w);
    if (is_nan(w)) return 0u;
    if (v >= 2147483648.0) return uint(2147483647);
    if (v < -2147483648.0) return uint(-2147483647 - 1);
    return uint(int(v));
}
uint op_int_to_float(uint w) { return floatBitsToUint(float(int(w))); }
uint op_float_truth(uint w) { return WORD(MAGNITUDE(w) != 0u); }    // -0.0 is false, NaN true
uint op_int_truth(uint w) { return WORD(w != 0u); }
uint op_float_not(uint w) { return WORD(MAGNITUDE(w) == 0u); }
uint op_int_not(uint w) { return WORD(w == 0u); }
uint op_float_truth_as_float(uint w) { return floatBitsToUint(MAGNITUDE(w) != 0u ? 1.0 : 0.0); }
uint op_int_truth_as_float(uint w) { return floatBitsToUint(w != 0u ? 1.0 : 0.0); }
uint op_int_neg(uint w) { return uint(-int(w)); }
uint op_int_abs(uint w) { int v = int(w); return uint(v < 0 ? -v : v); }
uint op_int_square(uint w) { int v = int(w); return uint(v * v); }
uint op_int_sign(uint w) { return uint(sign(int(w))); }
uint op_int_signbit(uint w) { return WORD(int(w) < 0); }
uint op_isnan(uint w) { return WORD(is_nan(w)); }
uint op_isinf(uint w) { return WORD(is_inf(w)); }
uint op_isfinite(uint w) { return WORD(MAGNITUDE(w) < 0x7f800000u); }
uint op_isposinf(uint w) { return WORD(w == 0x7f800000u); }
uint op_isneginf(uint w) { return WORD(w == 0xff800000u); }
uint op_signbit(uint w) { return w >> 31; }

void main() {
    uint i = linear_index();
    if (i >= n) return;
    y[i] = OP(x[i]);
}
