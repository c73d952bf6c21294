"""Word ops of shaders/bitwise.comp: bitwise and / or / xor, shifts, gcd and lcm of int32 (a bool
read as its 0 / 1 word), isclose and angle of float32, with numpy broadcasting. Python numbers
are operands too (written as the word they are in the op's dtype)."""
from __future__ import annotations

from ..tensors.tensor import Tensor
from . import dispatch
from .elementwise import MAX_RANK, broadcast_output, broadcast_strides
from .storage_ops import any_storage
from .typed import word

INT_OPS = ("and", "or", "xor", "shl", "shr", "gcd", "lcm")
FLOAT_OPS = ("isclose", "angle")


def _pad(values, fill):
    return tuple(values) + (fill,) * (MAX_RANK - len(values))


@any_storage
def binary(op: str, a, b, out_dtype: str, rtol: float = 0.0, atol: float = 0.0,
           equal_nan: bool = False) -> Tensor:
    """op(a, b) of bitwise.comp into a new `out_dtype` tensor. Tensors are read as their words:
    int32 / bool for INT_OPS, float32 for FLOAT_OPS (the caller converts)."""
    if op not in INT_OPS + FLOAT_OPS:
        raise ValueError(f"Unknown bitwise op {op!r}.")
    tensors = [v for v in (a, b) if isinstance(v, Tensor)]
    if not tensors:
        raise TypeError("bitwise.binary() needs at least one kerasgl Tensor.")
    for t in tensors:
        t._check_alive()
    out, (a_shape, b_shape) = broadcast_output((a, b), out_dtype)
    out_shape = out.shape
    if out.size == 0:
        return out
    a_scalar, b_scalar = not isinstance(a, Tensor), not isinstance(b, Tensor)
    broadcast = (not a_scalar and a_shape != out_shape) or (not b_scalar and b_shape != out_shape)
    number_dtype = "float32" if op in FLOAT_OPS else "int32"
    uniforms = {"n": out.size}
    if a_scalar:
        uniforms["a_word"] = word(a, number_dtype)
    if b_scalar:
        uniforms["b_word"] = word(b, number_dtype)
    if op == "isclose":
        uniforms.update(rtol=float(rtol), atol=float(atol), equal_nan=int(bool(equal_nan)))
    if broadcast:
        uniforms.update(rank=len(out_shape), out_shape=_pad(out_shape, 1),
                        a_strides=_pad(broadcast_strides(a_shape, out_shape), 0),
                        b_strides=_pad(broadcast_strides(b_shape, out_shape), 0))
    defines = {"OP": f"op_{op}", "A_SCALAR": a_scalar, "B_SCALAR": b_scalar,
               "BROADCAST": broadcast}
    buffers = [out if a_scalar else a, out if b_scalar else b, out]
    dispatch.run("bitwise.comp", defines=defines, buffers=buffers, uniforms=uniforms,
                 groups=dispatch.groups_for(out.size))
    return out
