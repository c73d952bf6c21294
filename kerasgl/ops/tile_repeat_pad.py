"""Tile, repeat and constant padding: each output element reads one input element through a
per-axis index map (shaders/tile_repeat_pad.comp), or is the padding value. float32 and int32 alike."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .storage_ops import any_storage

MAX_RANK = 8
_UNBOUNDED = 2**31 - 1


def _checked(x, count, what):
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}() takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    if x.ndim > MAX_RANK:
        raise ShapeError(f"{what} supports up to {MAX_RANK} axes. Received shape {list(x.shape)}.")
    if len(count) != x.ndim:
        raise ShapeError(f"{what}: {len(count)} entries for a tensor of shape {list(x.shape)}.")


def _run(x, out_shape, maps, fill_bits=0):
    """maps: one (offset, limit, divisor) per axis."""
    out = empty(out_shape, x.dtype)
    if not out.size or not x.size:
        return out
    rank = x.ndim
    pad = (0,) * (MAX_RANK - rank)
    strides = [math.prod(x.shape[a + 1:]) for a in range(rank)]
    dispatch.run("tile_repeat_pad.comp", buffers=[x, out],
                 uniforms={"rank": rank, "n": out.size, "fill": fill_bits,
                           "out_shape": tuple(out_shape) + (1,) * (MAX_RANK - rank),
                           "offset": tuple(m[0] for m in maps) + pad,
                           "limit": tuple(m[1] for m in maps) + pad,
                           "divisor": tuple(m[2] for m in maps) + (1,) * (MAX_RANK - rank),
                           "size": tuple(x.shape) + (1,) * (MAX_RANK - rank),
                           "in_strides": tuple(strides) + pad},
                 groups=dispatch.groups_for(out.size))
    return out


@any_storage
def tile(x: Tensor, reps) -> Tensor:
    """numpy.tile with one repetition count per axis of x."""
    reps = [int(r) for r in reps]
    _checked(x, reps, "tile")
    if min(reps, default=1) < 0:
        raise ShapeError(f"tile: repetitions {reps} must be >= 0.")
    return _run(x, tuple(n * r for n, r in zip(x.shape, reps)), [(0, _UNBOUNDED, 1)] * x.ndim)


@any_storage
def repeat(x: Tensor, repeats: int, axis: int) -> Tensor:
    """numpy.repeat with one repetition count for every element along `axis`."""
    if not -x.ndim <= axis < x.ndim or repeats < 0:
        raise ShapeError(f"repeat: axis {axis} / repeats {repeats} do not fit shape {list(x.shape)}.")
    axis %= x.ndim
    maps = [(0, _UNBOUNDED, 1)] * x.ndim
    maps[axis] = (0, _UNBOUNDED, max(repeats, 1))
    out_shape = tuple(n * repeats if d == axis else n for d, n in enumerate(x.shape))
    _checked(x, maps, "repeat")
    return _run(x, out_shape, maps)


@any_storage
def pad_constant(x: Tensor, pads, value=0.0) -> Tensor:
    """numpy.pad(mode="constant") with (before, after) per axis."""
    pads = [(int(a), int(b)) for a, b in pads]
    _checked(x, pads, "pad_constant")
    if any(a < 0 or b < 0 for a, b in pads):
        raise ShapeError(f"pad_constant: paddings {pads} must be >= 0.")
    dtype = np.float32 if x.dtype == "float32" else np.int32
    fill = int(np.array([value], dtype).view(np.uint32)[0])
    return _run(x, tuple(n + a + b for n, (a, b) in zip(x.shape, pads)),
                [(a, n, 1) for n, (a, _) in zip(x.shape, pads)], fill)
