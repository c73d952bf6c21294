"""keras.ops maths beyond math_unary.py: trigonometric, hyperbolic and special functions
(shaders/math_extra.comp), reductions reduce.comp does not do (products, NaN-ignoring statistics,
counts, NaN-ignoring argmax / argmin: shaders/line_reduce.comp) and sparsemax
(shaders/sparsemax.comp). float32 in; counts and indices come out int32."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .checks import float32_tensor
from .layout import transpose
from .reduce import normalize_axes
from .storage_ops import any_storage

FUNCTIONS = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
             "arccosh", "arctanh", "log10", "log2", "exp2", "cbrt", "trunc", "fabs", "sinc",
             "deg2rad", "rad2deg", "nan_to_num", "erfc", "erfinv", "i0", "threshold")
# line_reduce.comp's OP codes; the int32 ones count or index.
LINE_OPS = {"prod": 0, "nansum": 1, "nanmax": 2, "nanmin": 3, "nanprod": 4, "count_nonzero": 5,
            "nanmean": 6, "nanargmax": 7, "nanargmin": 8}
INT_LINE_OPS = ("count_nonzero", "nanargmax", "nanargmin")


@any_storage
def math_extra(name: str, x: Tensor, *params: float) -> Tensor:
    """y = name(x) elementwise (name one of FUNCTIONS); `params` fill the uniforms p0.. (the
    replacements of nan_to_num, the threshold and default value of threshold)."""
    if name not in FUNCTIONS:
        raise ValueError(f"math_extra: unknown function {name!r}; known: {FUNCTIONS}.")
    x = float32_tensor(x, f"{name}() input")
    out = empty(x.shape)
    if out.size:
        uniforms = {"n": out.size, **{f"p{i}": float(v) for i, v in enumerate(params)}}
        dispatch.run("math_extra.comp", defines={"FN": f"fn_{name}"}, buffers=[x, out],
                     uniforms=uniforms, groups=dispatch.groups_for(out.size))
    return out


def _lines(x: Tensor, axes):
    """x (or a transposed copy, a temporary of the caller's scope) seen as (outer, r, inner) with
    the reduced axes merged into r."""
    if axes and axes == tuple(range(axes[0], axes[-1] + 1)):
        shape = x.shape
        return x, (math.prod(shape[:axes[0]]), math.prod(shape[axes[0]:axes[-1] + 1]),
                   math.prod(shape[axes[-1] + 1:]))
    kept = tuple(d for d in range(x.ndim) if d not in axes)
    moved = transpose(x, kept + tuple(axes))
    return moved, (math.prod(x.shape[d] for d in kept), math.prod(x.shape[d] for d in axes), 1)


@any_storage
def line_reduce(op: str, x: Tensor, axis=None, keepdims: bool = False) -> Tensor:
    """op (one of LINE_OPS) over `axis` (None, an int or a tuple) as jnp computes it; an argmax
    over several axes indexes their flattening, as jnp's over axis=None does."""
    if op not in LINE_OPS:
        raise ValueError(f"Unknown reduction {op!r}; expected one of {tuple(LINE_OPS)}.")
    x = float32_tensor(x, f"{op}() input")
    axes = normalize_axes(axis, x.ndim)
    out_shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape)) if keepdims else \
        tuple(n for d, n in enumerate(x.shape) if d not in axes)

    def compute():
        out = empty(out_shape, "int32" if op in INT_LINE_OPS else "float32")
        if not out.size:
            return out
        source, (outer, r, inner) = _lines(x, axes) if axes else (x, (x.size, 1, 1))
        dispatch.run("line_reduce.comp", defines={"OP": LINE_OPS[op]}, buffers=[source, out],
                     uniforms={"lines": outer * inner, "len": r, "inner": inner},
                     groups=dispatch.groups_for(outer * inner))
        return out
    return ownership.tidy.run(compute)


@any_storage
def sparsemax(x: Tensor, axis: int = -1) -> Tensor:
    """keras.ops.sparsemax of float32 x along `axis` (Keras 3's JAX formula)."""
    x = float32_tensor(x, "sparsemax() input")
    if not -x.ndim <= axis < x.ndim:
        raise ShapeError(f"sparsemax: axis {axis} is out of range for shape {list(x.shape)}.")
    axis %= x.ndim
    out = empty(x.shape)
    if out.size:
        inner = math.prod(x.shape[axis + 1:])
        lines = out.size // x.shape[axis]
        dispatch.run("sparsemax.comp", buffers=[x, out],
                     uniforms={"lines": lines, "len": x.shape[axis], "inner": inner},
                     groups=dispatch.groups_for(lines))
    return out
