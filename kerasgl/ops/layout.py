"""Ops that move data without arithmetic: reshape (a view), copy, transpose."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty, view
from . import dispatch
from .storage_ops import any_storage, copy_buffer, to_texture

MAX_RANK = 8


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
    """A new tensor with the same contents, in the same kind of storage."""
    x._check_alive()
    return to_texture(x) if x.storage == "texture" else copy_buffer(x)


def normalize_permutation(axes, rank: int) -> tuple[int, ...]:
    """A permutation of range(rank); None reverses the axes (numpy's default)."""
    if axes is None:
        return tuple(range(rank - 1, -1, -1))
    try:
        perm = tuple(int(a) for a in axes)
    except (TypeError, ValueError):
        raise ShapeError(f"transpose axes must be a sequence of integers. Received {axes!r}.")
    if len(perm) != rank or sorted(a % rank for a in perm if -rank <= a < rank) != list(range(rank)):
        raise ShapeError(f"transpose axes {list(perm)} are not a permutation of the {rank} axes "
                         f"of a rank-{rank} tensor.")
    return tuple(a % rank for a in perm)


def _merge_axes(shape, perm):
    """Drop size-1 axes and merge input axes that stay neighbours in the output, so any
    permutation whose essential rank is <= MAX_RANK runs, and index maths stays short.
    Returns (input shape, permutation) of the simplified problem."""
    kept = [a for a in range(len(shape)) if shape[a] != 1]
    order = [a for a in perm if shape[a] != 1]
    groups = []            # runs of input axes, in output order
    for a in order:
        if groups and groups[-1][-1] + 1 == a:
            groups[-1].append(a)
        else:
            groups.append([a])
    by_input = sorted(groups, key=lambda g: g[0])
    merged_shape = [math.prod(shape[a] for a in g) for g in by_input]
    position = {g[0]: i for i, g in enumerate(by_input)}
    merged_perm = [position[g[0]] for g in groups]
    assert len(kept) == sum(len(g) for g in groups)
    return merged_shape, merged_perm


@any_storage
def transpose(x: Tensor, axes=None) -> Tensor:
    """numpy.transpose: output axis d is input axis axes[d]; a new tensor (data is moved)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"transpose() takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    perm = normalize_permutation(axes, x.ndim)
    out_shape = tuple(x.shape[a] for a in perm)
    shape, merged = _merge_axes(x.shape, perm)
    if merged == sorted(merged):          # nothing actually moves: a copy in the new shape
        return ownership.tidy.run(lambda: view(copy(x), out_shape))
    if len(shape) > MAX_RANK:
        raise ShapeError(f"transpose supports up to {MAX_RANK} axes that actually move. Received "
                         f"shape {list(x.shape)} with axes {list(perm)}.")
    out = empty(out_shape, x.dtype)
    strides = [math.prod(shape[a + 1:]) for a in range(len(shape))]
    rank = len(merged)
    merged_out = [shape[a] for a in merged]
    rows = math.prod(merged_out[:-1])
    dispatch.run("transpose.comp", buffers=[x, out],
                 uniforms={"rank": rank, "rows": rows,
                           "out_shape": tuple(merged_out) + (1,) * (MAX_RANK - rank),
                           "in_strides": tuple(strides[a] for a in merged) + (0,) * (MAX_RANK - rank)},
                 groups=dispatch.groups_for(rows * math.ceil(merged_out[-1] / 4)))
    return out
