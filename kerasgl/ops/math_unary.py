"""Elementwise maths of keras.ops that are not activations (floor, ceil, round, sign, erf, log1p,
expm1, reciprocal, rsqrt), run by shaders/math_unary.comp on float32 tensors, and running sums and
products (shaders/cumulative.comp)."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .storage_ops import any_storage

FUNCTIONS = ("floor", "ceil", "round", "sign", "reciprocal", "rsqrt", "erf", "expm1", "log1p")


@any_storage
def math_unary(name: str, x: Tensor) -> Tensor:
    """y = name(x) elementwise, name one of FUNCTIONS."""
    if name not in FUNCTIONS:
        raise ValueError(f"math_unary: unknown function {name!r}; known: {FUNCTIONS}.")
    if not isinstance(x, Tensor):
        raise TypeError(f"math_unary() takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    if x.dtype != "float32":
        raise ShapeError(f"math_unary({name}) takes float32 tensors. Received {x.dtype} tensor of "
                         f"shape {list(x.shape)}.")
    out = empty(x.shape)
    if out.size:
        dispatch.run("math_unary.comp", defines={"FN": f"math_{name}"}, buffers=[x, out],
                     uniforms={"n": out.size}, groups=dispatch.groups_for(out.size))
    return out


@any_storage
def cumulative(x: Tensor, axis: int, product: bool = False) -> Tensor:
    """Running sum (or product) of float32 x along `axis`, as numpy.cumsum / cumprod."""
    if not isinstance(x, Tensor):
        raise TypeError(f"cumulative() takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    if x.dtype != "float32" or not -x.ndim <= axis < x.ndim:
        raise ShapeError(f"cumulative: axis {axis} of a {x.dtype} tensor of shape "
                         f"{list(x.shape)} (float32 tensors only).")
    axis %= x.ndim
    out = empty(x.shape)
    if out.size:
        inner = math.prod(x.shape[axis + 1:])
        lines = out.size // x.shape[axis]
        dispatch.run("cumulative.comp", defines={"PRODUCT": product}, buffers=[x, out],
                     uniforms={"lines": lines, "len": x.shape[axis], "inner": inner},
                     groups=dispatch.groups_for(lines))
    return out
