"""Axis bookkeeping shared by the ops that reduce over a set of axes (softmax, layer norm, ...).

A shape and a set of reduced axes become two lists of (size, stride) groups: adjacent axes of the
same kind are merged, so softmax over the last axis is one reduced group of stride 1 and the
shaders need no division per element. shaders/axis_groups.glsl reads these groups back.
"""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors.tensor import empty
from . import dispatch

MAX_GROUPS = 4


def reduced_axes(x, axis, what: str) -> tuple[int, ...]:
    """normalize_axes(axis, x.ndim) for an op over axes of x, which cannot be a scalar."""
    if x.ndim == 0:
        raise ShapeError(f"{what} needs a tensor of rank >= 1. Received a scalar.")
    return normalize_axes(axis, x.ndim)


def normalize_axes(axes, rank: int, what: str = "axis") -> tuple[int, ...]:
    """Sorted non-negative axes from an int or a sequence of ints (negative counted from the end)."""
    if isinstance(axes, int):
        axes = (axes,)
    result = set()
    for axis in axes:
        axis = int(axis)
        if not -rank <= axis < rank:
            raise ShapeError(f"{what} {axis} is out of range for a tensor of rank {rank}.")
        result.add(axis % rank)
    return tuple(sorted(result))


def axis_groups(shape, axes) -> tuple[list, list]:
    """(kept groups, reduced groups), each a list of (size, element stride), outermost first.
    Axes of size 1 are dropped; an empty kept list means one kept position."""
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step
        step *= shape[d]
    kept, reduced = [], []
    last_kind = None
    for d, size in enumerate(shape):
        if size == 1:
            continue
        kind = d in axes
        target = reduced if kind else kept
        if last_kind is kind and target:
            # Merge with the previous group of the same kind (it is adjacent in memory).
            prev_size, _ = target[-1]
            target[-1] = (prev_size * size, strides[d])
        else:
            target.append((size, strides[d]))
        last_kind = kind
    if len(kept) > MAX_GROUPS or len(reduced) > MAX_GROUPS:
        raise ShapeError(f"Reducing axes {list(axes)} of shape {list(shape)} interleaves too many "
                         f"groups of axes (at most {MAX_GROUPS} of each kind).")
    return kept, reduced


def group_uniforms(kept, reduced) -> dict:
    """Uniforms of shaders/axis_groups.glsl for these groups."""
    def pad(values, fill):
        return tuple(values) + (fill,) * (MAX_GROUPS - len(values))
    return {
        "kept_count": len(kept),
        "kept_sizes": pad([s for s, _ in kept], 1), "kept_strides": pad([t for _, t in kept], 0),
        "red_sizes": pad([s for s, _ in reduced], 1), "red_strides": pad([t for _, t in reduced], 0),
        "red_len": math.prod(s for s, _ in reduced),
    }


def run_grouped(shader: str, kept, reduced, *, defines: dict, buffers, uniforms: dict) -> None:
    """Dispatch a shader built on axis_groups.glsl: one invocation per kept position."""
    defines = {**defines, "RED_GROUPS": max(1, len(reduced))}
    n_outer = math.prod(s for s, _ in kept)
    uniforms = {"n_outer": n_outer, **uniforms, **group_uniforms(kept, reduced)}
    dispatch.run(shader, defines=defines, buffers=buffers,
                 uniforms=uniforms,
                 groups=dispatch.groups_for(n_outer))


def run_over_axes(shader: str, x, axes, *, defines: dict, buffers, uniforms: dict):
    """A new tensor shaped like x, written by a shader built on axis_groups.glsl (one invocation
    per position outside `axes`) that reads `buffers` and writes the output, bound after them."""
    out = empty(x.shape)
    if out.size:
        kept, reduced = axis_groups(x.shape, axes)
        run_grouped(shader, kept, reduced, defines=defines, buffers=[*buffers, out],
                    uniforms=uniforms)
    return out
