"""Strided windows of a tensor (numpy's basic slicing x[a:b:s, ...]): a new tensor, data moved.

The window is given per axis as (start, size, step) with start the index of its first element
(already normalised, so a reversed slice starts at its highest index) and step non-zero.
"""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .storage_ops import any_storage

MAX_RANK = 8


@any_storage
def strided_slice(x: Tensor, window) -> Tensor:
    """x[start0::step0 (size0 of them), ...]; `window` holds one (start, size, step) per axis of x.
    float32 and int32 tensors alike (the shader copies words)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"strided_slice() takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    window = [tuple(int(v) for v in w) for w in window]
    if len(window) != x.ndim:
        raise ShapeError(f"strided_slice: {len(window)} (start, size, step) entries for a tensor of "
                         f"shape {list(x.shape)}.")
    for axis, (start, size, step) in enumerate(window):
        last = start + (size - 1) * step
        if size < 0 or step == 0 or (size and not (0 <= start < x.shape[axis]
                                                    and 0 <= last < x.shape[axis])):
            raise ShapeError(f"strided_slice: window (start {start}, size {size}, step {step}) "
                             f"does not fit axis {axis} of shape {list(x.shape)}.")
    out_shape = tuple(size for _, size, _ in window)
    out = empty(out_shape, x.dtype)
    if not out.size:
        return out
    # Merge nothing, but drop axes of size 1 (they only add to the base offset): ranks past 8 that
    # are mostly ones still fit.
    strides = [math.prod(x.shape[a + 1:]) for a in range(x.ndim)]
    base = sum(start * stride for (start, _, _), stride in zip(window, strides))
    kept = [(size, step * stride) for (_, size, step), stride in zip(window, strides) if size != 1]
    if len(kept) > MAX_RANK:
        raise ShapeError(f"strided_slice supports up to {MAX_RANK} axes of size above 1. Received "
                         f"the output shape {list(out_shape)}.")
    kept = kept or [(1, 0)]
    rank = len(kept)
    dispatch.run("strided_slice.comp", buffers=[x, out],
                 uniforms={"rank": rank, "n": out.size, "base": base,
                           "out_shape": tuple(s for s, _ in kept) + (1,) * (MAX_RANK - rank),
                           "in_strides": tuple(t for _, t in kept) + (0,) * (MAX_RANK - rank)},
                 groups=dispatch.groups_for(out.size))
    return out
