"""Ops over the 32-bit words of float32, int32 and bool tensors (a bool is a 0 / 1 word):
comparisons, logical ops, int32 arithmetic with jnp's semantics, casts, the float
classifications (isnan, ...) and where. shaders/typed_binary.comp, typed_unary.comp, where.comp.

Python numbers are operands too: `word(value, dtype)` is the word a number has as `dtype`.
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .elementwise import MAX_RANK, broadcast_output, broadcast_strides
from .storage_ops import any_storage

KINDS = {"float32": 0, "int32": 1, "bool": 2}
COMPARISONS = ("gt", "ge", "lt", "le", "eq", "ne")
LOGICAL = ("and", "or", "xor")
INT_ARITHMETIC = ("add", "sub", "mul", "maximum", "minimum", "floordiv", "mod")
UNARY_OPS = ("float_to_int", "int_to_float", "float_truth", "int_truth", "float_not", "int_not",
             "float_truth_as_float", "int_truth_as_float", "int_neg", "int_abs", "int_square",
             "int_sign", "int_signbit", "isnan", "isinf", "isfinite", "isposinf", "isneginf",
             "signbit")


def number_dtype(value) -> str:
    """The dtype a Python number takes beside a tensor in Keras (weakly typed)."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int32"
    return "float32"


def dtype_of_operand(value) -> str:
    return value.dtype if isinstance(value, Tensor) else number_dtype(value)


def word(value, dtype: str) -> int:
    """The 32-bit word (an unsigned int) that the number `value` is as `dtype`."""
    if dtype == "float32":
        return int(np.array(value, np.float32).view(np.uint32))
    if dtype == "bool":
        return int(bool(value))
    return int(value) & 0xFFFFFFFF


def _pad(values, fill):
    return tuple(values) + (fill,) * (MAX_RANK - len(values))


def _checked(value):
    if isinstance(value, Tensor):
        value._check_alive()
        return value
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return value
    raise TypeError(f"typed ops take kerasgl Tensors and Python numbers, not {type(value).__name__}.")


@any_storage
def binary(op: str, a, b, out_dtype: str) -> Tensor:
    """OP(a, b) over tensors and numbers broadcast together; each tensor read by its dtype.
    Comparisons and arithmetic compute in float32 when an operand is float32 (a float tensor or
    a Python float), else in int32; logical ops take each operand's truth (nonzero)."""
    if op not in COMPARISONS + LOGICAL + INT_ARITHMETIC:
        raise ValueError(f"Unknown typed binary op {op!r}.")
    a, b = _checked(a), _checked(b)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError("binary() needs at least one kerasgl Tensor.")
    a_dtype, b_dtype = dtype_of_operand(a), dtype_of_operand(b)
    common_float = "float32" in (a_dtype, b_dtype)
    if op in INT_ARITHMETIC and common_float:
        raise ShapeError(f"typed binary: {op} takes int32 / bool operands, not float32.")
    out, (a_shape, b_shape) = broadcast_output((a, b), out_dtype)
    out_shape = out.shape
    if out.size == 0:
        return out
    a_scalar, b_scalar = not isinstance(a, Tensor), not isinstance(b, Tensor)
    logical = op in LOGICAL
    # A number is written as the dtype it is computed in (its own, for a logical op's truth).
    def scalar_dtype(d):
        return d if logical else ("float32" if common_float else "int32")
    a_float = a_dtype == "float32" if (logical or not a_scalar) else common_float
    b_float = b_dtype == "float32" if (logical or not b_scalar) else common_float
    broadcast = (not a_scalar and a_shape != out_shape) or (not b_scalar and b_shape != out_shape)
    defines = {"OP": f"op_{op}", "A_FLOAT": a_float, "B_FLOAT": b_float,
               "COMMON_FLOAT": common_float, "LOGICAL": logical, "OUT_KIND": KINDS[out_dtype],
               "A_SCALAR": a_scalar, "B_SCALAR": b_scalar, "BROADCAST": broadcast}
    uniforms = {"n": out.size}
    if a_scalar:
        uniforms["a_word"] = word(a, scalar_dtype(a_dtype))
    if b_scalar:
        uniforms["b_word"] = word(b, scalar_dtype(b_dtype))
    if broadcast:
        uniforms.update(rank=len(out_shape), out_shape=_pad(out_shape, 1),
                        a_strides=_pad(broadcast_strides(a_shape, out_shape), 0),
                        b_strides=_pad(broadcast_strides(b_shape, out_shape), 0))
    buffers = [out if a_scalar else a, out if b_scalar else b, out]
    dispatch.run("typed_binary.comp", defines=defines, buffers=buffers, uniforms=uniforms,
                 groups=dispatch.groups_for(out.size))
    return out


@any_storage
def unary(op: str, x: Tensor, out_dtype: str) -> Tensor:
    """op_<op>(x) of typed_unary.comp, word to word, into a new tensor of `out_dtype`."""
    if op not in UNARY_OPS:
        raise ValueError(f"Unknown typed unary op {op!r}.")
    if not isinstance(x, Tensor):
        raise TypeError(f"unary() takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    out = empty(x.shape, out_dtype)
    if out.size:
        dispatch.run("typed_unary.comp", defines={"OP": f"op_{op}"}, buffers=[x, out],
                     uniforms={"n": out.size}, groups=dispatch.groups_for(out.size))
    return out


def copy(x: Tensor) -> Tensor:
    out = empty(x.shape, x.dtype)
    if out.size:
        dispatch.copy_buffer(out, x, size=x.nbytes)
    return out


@any_storage
def convert(x: Tensor, dtype: str) -> Tensor:
    """x as float32, int32 or bool: float -> int toward zero, saturating, NaN -> 0 (XLA's
    conversion); -> bool: nonzero; bool -> int32: the same words (a copy). A new tensor."""
    x._check_alive()
    source = x.dtype
    if dtype == source:
        return copy(x)
    if dtype == "bool":
        return unary("float_truth" if source == "float32" else "int_truth", x, "bool")
    if dtype == "float32":
        return unary("int_to_float", x, "float32")
    if source == "float32":
        return unary("float_to_int", x, "int32")
    return _retagged_copy(x, dtype)          # bool -> int32: the same 0 / 1 words


def _retagged_copy(x: Tensor, dtype: str) -> Tensor:
    out = empty(x.shape, dtype)
    if out.size:
        dispatch.copy_buffer(out, x, size=x.nbytes)
    return out


def as_float(value):
    """A float32 operand for binary.comp: a float32 tensor as it is, another converted (a new
    tensor the caller disposes), a number as a float. Returns (operand, made or None)."""
    if isinstance(value, Tensor):
        if value.dtype == "float32":
            return value, None
        made = convert(value, "float32")
        return made, made
    return float(value), None


def as_dtype(value, dtype: str):
    """(operand of `dtype`, made or None): a tensor converted when it differs, a number as its
    word's value (the caller writes it with word())."""
    if isinstance(value, Tensor):
        if value.dtype == dtype:
            return value, None
        made = convert(value, dtype)
        return made, made
    return value, None


@any_storage
def where(condition: Tensor, x1, x2, out_dtype: str) -> Tensor:
    """condition ? x1 : x2 broadcast together; x1 and x2 are tensors or numbers, taken as
    `out_dtype` (converted first where they differ)."""
    if not isinstance(condition, Tensor):
        raise TypeError("where() takes a tensor condition.")
    condition._check_alive()

    def compute():
        # A converted operand is a temporary of this scope.
        x, y = (as_dtype(_checked(value), out_dtype)[0] for value in (x1, x2))
        out, shapes = broadcast_output((condition, x, y), out_dtype, "where")
        out_shape = out.shape
        if out.size == 0:
            return out
        x_scalar, y_scalar = not isinstance(x, Tensor), not isinstance(y, Tensor)
        broadcast = any(tuple(s) != tuple(out_shape) for s, v in zip(shapes, (condition, x, y))
                        if isinstance(v, Tensor))
        uniforms = {"n": out.size}
        if x_scalar:
            uniforms["x_word"] = word(x, out_dtype)
        if y_scalar:
            uniforms["y_word"] = word(y, out_dtype)
        if broadcast:
            uniforms.update(rank=len(out_shape), out_shape=_pad(out_shape, 1),
                            c_strides=_pad(broadcast_strides(shapes[0], out_shape), 0),
                            x_strides=_pad(broadcast_strides(shapes[1], out_shape), 0),
                            y_strides=_pad(broadcast_strides(shapes[2], out_shape), 0))
        defines = {"COND_FLOAT": condition.dtype == "float32", "X_SCALAR": x_scalar,
                   "Y_SCALAR": y_scalar, "BROADCAST": broadcast}
        buffers = [condition, out if x_scalar else x, out if y_scalar else y, out]
        dispatch.run("where.comp", defines=defines, buffers=buffers, uniforms=uniforms,
                     groups=dispatch.groups_for(out.size))
        return out
    return ownership.tidy.run(compute)


def bools_as_float(value, made: list):
    """`value` (a call's arguments: tensors in lists, tuples, dicts) with each bool tensor
    replaced by a float32 0.0 / 1.0 copy, appended to `made` (the caller disposes them): how a
    layer that is not an op node receives a bool (a mask computed by keras.ops), as kerasgl's
    own masks are float32."""
    if isinstance(value, Tensor):
        if value.dtype != "bool":
            return value
        converted = convert(value, "float32")
        made.append(converted)
        return converted
    if isinstance(value, (list, tuple)):
        return type(value)(bools_as_float(v, made) for v in value)
    if isinstance(value, dict):
        return {k: bools_as_float(v, made) for k, v in value.items()}
    return value
