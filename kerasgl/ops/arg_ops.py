"""Index-valued ops: argmax / argmin along an axis (float32 in, int32 out) and one_hot (int32
indices in, float32 out), and casts between float32 and int32."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .storage_ops import any_storage


@any_storage
def arg_reduce(x: Tensor, axis: int, smallest: bool = False) -> Tensor:
    """numpy.argmax (argmin when `smallest`) of float32 x along `axis`: an int32 tensor without it."""
    if not isinstance(x, Tensor):
        raise TypeError(f"arg_reduce() takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    if x.dtype != "float32" or not -x.ndim <= axis < x.ndim or x.shape[axis] == 0:
        raise ShapeError(f"arg_reduce: axis {axis} of a {x.dtype} tensor of shape {list(x.shape)} "
                         "(a non-empty axis of a float32 tensor).")
    axis %= x.ndim
    out = empty(x.shape[:axis] + x.shape[axis + 1:], "int32")
    if out.size:
        dispatch.run("arg_reduce.comp", defines={"ARG_MIN": smallest}, buffers=[x, out],
                     uniforms={"lines": out.size, "len": x.shape[axis],
                               "inner": math.prod(x.shape[axis + 1:])},
                     groups=dispatch.groups_for(out.size))
    return out


@any_storage
def one_hot(indices: Tensor, depth: int) -> Tensor:
    """float32 (*indices.shape, depth): 1.0 at each int32 index, rows of zeros for indices out of
    range."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"one_hot() takes a kerasgl Tensor, not {type(indices).__name__}.")
    indices._check_alive()
    if indices.dtype != "int32" or depth < 0:
        raise ShapeError(f"one_hot takes int32 indices and a depth >= 0. Received a "
                         f"{indices.dtype} tensor of shape {list(indices.shape)}, depth {depth}.")
    out = empty(tuple(indices.shape) + (depth,))
    if out.size:
        dispatch.run("one_hot.comp", buffers=[indices, out],
                     uniforms={"n": out.size, "depth": depth}, groups=dispatch.groups_for(out.size))
    return out


@any_storage
def cast(x: Tensor, dtype: str) -> Tensor:
    """x as float32 or int32 (float to int truncates toward zero); the same dtype: a copy."""
    if not isinstance(x, Tensor):
        raise TypeError(f"cast() takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    if dtype not in ("float32", "int32"):
        raise ShapeError(f"cast: kerasgl tensors are float32 or int32, not {dtype}.")
    out = empty(x.shape, dtype)
    if out.size and dtype == x.dtype:
        dispatch.copy_buffer(out, x, size=x.nbytes)
    elif out.size:
        dispatch.run("cast.comp", defines={"TO_INT": dtype == "int32"}, buffers=[x, out],
                     uniforms={"n": out.size}, groups=dispatch.groups_for(out.size))
    return out
