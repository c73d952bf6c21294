"""softmax and log_softmax over any axis (or set of axes), numerically stable."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensor import Tensor, empty
from . import dispatch
from .axes import axis_groups, normalize_axes, run_grouped
from .storage_ops import any_storage


def _check(x) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"softmax takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    if x.dtype != "float32":
        raise ShapeError(f"softmax takes float32 tensors. Received {x.dtype} of shape {list(x.shape)}.")
    return x


def _run(x: Tensor, axis, log: bool) -> Tensor:
    x = _check(x)
    if x.ndim == 0:
        raise ShapeError("softmax needs a tensor of rank >= 1. Received a scalar.")
    axes = normalize_axes(axis, x.ndim)
    out = empty(x.shape)
    if out.size == 0:
        return out
    kept, reduced = axis_groups(x.shape, axes)
    run_grouped("softmax.comp", kept, reduced, defines={"LOG": log}, buffers=[x, out], uniforms={})
    return out


@any_storage
def softmax(x: Tensor, axis=-1) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) over `axis` (an int or a sequence of ints)."""
    return _run(x, axis, log=False)


@any_storage
def log_softmax(x: Tensor, axis=-1) -> Tensor:
    """x - max - log(sum(exp(x - max))) over `axis` (an int or a sequence of ints)."""
    return _run(x, axis, log=True)
