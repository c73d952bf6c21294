#version 430
// c = OP(a, b) elementwise over 32-bit words, with numpy broadcasting: comparisons, logical ops
// and int32 / bool arithmetic (kerasgl/ops/typed.py). Each word is read by its dtype.
// Defines: OP (an op_* function below); A_FLOAT / B_FLOAT (1: the operand's words are float32,
// 0: int32 or bool 0 / 1); COMMON_FLOAT (1: compute in float32, ints converted; 0: in int32);
// LOGICAL (1: OP takes the operands' truth, nonzero); OUT_KIND (0 float32, 1 int32, 2 bool);
// A_SCALAR / B_SCALAR (the operand is the uniform word a_word / b_word); BROADCAST (as binary.comp).
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

#if COMMON_FLOAT
#define T float
#else
#define T int
#endif
#if A_FLOAT
#define A_VALUE(w) uintBitsToFloat(w)
#define A_TRUE(w) (uintBitsToFloat(w) != 0.0)
#else
#define A_VALUE(w) int(w)
#define A_TRUE(w) ((w) != 0u)
#endif
#if B_FLOAT
#define B_VALUE(w) uintBitsToFloat(w)
#define B_TRUE(w) (uintBitsToFloat(w) != 0.0)
#else
#define B_VALUE(w) int(w)
#define B_TRUE(w) ((w) != 0u)
#endif

bool op_gt(T x, T y) { return x > y; }
bool op_ge(T x, T y) { return x >= y; }
bool op_lt(T x, T y) { return x < y; }
bool op_le(T x, T y) { return x <= y; }
bool op_eq(T x, T y) { return x == y; }
bool op_ne(T x, T y) { return !(x == y); }       // NaN != anything
bool op_and(bool x, bool y) { return x && y; }
bool op_or(bool x, bool y) { return x || y; }
bool op_xor(bool x, bool y) { return x != y; }
int op_add(int x, int y) { return x + y; }       // wraps, as XLA's int32
int op_sub(int x, int y) { return x - y; }
int op_mul(int x, int y) { return x * y; }
int op_maximum(int x, int y) { return max(x, y); }
int op_minimum(int x, int y) { return min(x, y); }
// jnp.floor_divide of ints: XLA's x / 0 is -1 and its remainder x; INT_MIN / -1 wraps.
int op_floordiv(int x, int y) {
    int q = y == 0 ? -1 : (y == -1 ? -x : x / y);
    int r = y == 0 ? x : (y == -1 ? 0 : x - q * y);
    return (sign(x) != sign(y) && r != 0) ? q - 1 : q;
}
// jnp.remainder of ints: the sign of the divisor; x % 0 is 0.
int op_mod(int x, int y) {
    if (y == 0 || y == -1) return 0;
    int r = x - (x / y) * y;
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
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
#if LOGICAL
    bool va = A_TRUE(wa), vb = B_TRUE(wb);
#else
    T va = T(A_VALUE(wa)), vb = T(B_VALUE(wb));
#endif
#if OUT_KIND == 2
    c[i] = OP(va, vb) ? 1u : 0u;
#elif OUT_KIND == 1
    c[i] = uint(OP(va, vb));
#else
    c[i] = floatBitsToUint(OP(va, vb));
#endif
}
