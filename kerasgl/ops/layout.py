"""Ops that move data without arithmetic: reshape (a view), copy, transpose."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensor import Tensor, empty, view
from . import dispatch


def resolve_shape(shape, size: int, source_shape=None) -> tuple[int, ...]:
    """A reshape target with at most one -1 resolved, checked against `size` elements."""
    shape = [int(d) for d in shape]
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in shape):
        raise ShapeError(f"Cannot reshape to {shape}: at most one dimension may be -1.")
    known = math.prod(d for d in shape if d != -1)
    if unknown:
        if known == 0 or size % known:
            raise ShapeError(f"Cannot reshape a tensor of shape {list(source_shape or [size])} "
                             f"({size} elements) to {shape}.")
        shape[unknown[0]] = size // known
    if math.prod(shape) != size:
        raise ShapeError(f"Cannot reshape a tensor of shape {list(source_shape or [size])} "
                         f"({size} elements) to {shape}.")
    return tuple(shape)


def reshape(x: Tensor, shape) -> Tensor:
    """Same data, another shape: a new tensor viewing the same GL storage (no copy)."""
    x._check_alive()
    return view(x, resolve_shape(shape, x.size, x.shape))


def copy(x: Tensor) -> Tensor:
    """A new buffer tensor with the same contents (GL buffer-to-buffer copy)."""
    x._check_alive()
    out = empty(x.shape, x.dtype)
    if x.size:
        from .. import context
        context.get_context().copy_buffer(out.gl_buffer(), x.gl_buffer(), size=x.nbytes)
    return out
