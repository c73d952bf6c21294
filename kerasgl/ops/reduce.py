"""Reductions over axes: sum, mean, max, min (with keepdims), as numpy computes them.

The reduced axes form runs of adjacent axes; each run is reduced in passes of shaders/reduce.comp
over a [outer, r, inner] view (no transposes). Long runs are split into chunks whose partial
results are reduced again, so sums are trees of short compensated sums: accurate to ~1e-7 relative
even over millions of elements, and parallel even when the output is a single number.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty, view
from . import dispatch, work
from .checks import float32_tensor
from .creation import fill
from .layout import copy
from .storage_ops import any_storage

OPS = {"sum": 0, "mean": 0, "max": 1, "min": 2}
# Enough invocations to keep every core (and SIMD lane) busy; chunks shorter than MIN_CHUNK are
# not worth an extra pass.
TARGET_INVOCATIONS = 4096
MIN_CHUNK = 32


def normalize_axes(axis, rank: int) -> tuple[int, ...]:
    """Sorted non-negative axes; None means every axis."""
    if axis is None:
        return tuple(range(rank))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    result = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise ShapeError(f"Axes must be integers. Received axis={axis!r}.")
        if not -rank <= a < rank:
            raise ShapeError(f"axis {a} is out of range for a tensor of rank {rank}.")
        result.append(int(a) % rank)
    if len(set(result)) != len(result):
        raise ShapeError(f"Repeated axis in axis={axis!r}.")
    return tuple(sorted(result))


def _runs(axes) -> list[tuple[int, int]]:
    """Adjacent axes grouped into [start, stop) runs."""
    runs = []
    for a in axes:
        if runs and runs[-1][1] == a:
            runs[-1] = (runs[-1][0], a + 1)
        else:
            runs.append((a, a + 1))
    return runs


def _pass(op: str, x: Tensor, outer: int, r: int, inner: int, divisor: float,
          dtype: str = "float32") -> Tensor:
    """Reduce the middle axis of x seen as [outer, r, inner] completely (one or more passes)."""
    def passes(current, r):
        while True:
            parallel = outer * inner
            chunks = 1
            if parallel < TARGET_INVOCATIONS and r > MIN_CHUNK:
                chunks = min(math.ceil(TARGET_INVOCATIONS / parallel), math.ceil(r / MIN_CHUNK))
            chunk = math.ceil(r / chunks)
            chunks = math.ceil(r / chunk)
            out = empty((outer * chunks * inner,), dtype)
            dispatch.run("reduce.comp", defines={"OP": OPS[op], "INT": dtype == "int32"},
                         buffers=[current, out],
                         uniforms={"outer": outer, "r": r, "inner": inner, "chunk": chunk,
                                   "chunks": chunks,
                                   "divisor": float(divisor) if chunks == 1 else 1.0},
                         groups=dispatch.groups_for(outer * chunks * inner),
                         work=(outer * r * inner, work.nbytes(current, out)))
            current, r = out, chunks
            if chunks == 1:
                return current
    return ownership.tidy.run(passes, x, r)


@any_storage
def reduce(op: str, x: Tensor, axis=None, keepdims: bool = False) -> Tensor:
    """op in sum / mean / max / min over `axis` (None, an int or a tuple), as numpy does.
    An int32 x: sum / max / min exactly in int32 (sums wrap around as XLA's); mean needs float32."""
    if op not in OPS:
        raise ValueError(f"Unknown reduction {op!r}; expected one of {tuple(OPS)}.")
    if not (isinstance(x, Tensor) and x.dtype == "int32" and op != "mean"):
        x = float32_tensor(x, f"{op}() input")
    x._check_alive()
    axes = normalize_axes(axis, x.ndim)
    out_shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape)) if keepdims else \
        tuple(n for d, n in enumerate(x.shape) if d not in axes)
    count = math.prod(x.shape[a] for a in axes)
    if count == 0 and op in ("max", "min"):
        raise ShapeError(f"{op}() of an empty axis has no identity: tensor of shape "
                         f"{list(x.shape)}, axis={axis!r}.")
    if math.prod(out_shape) == 0 or count == 0 or not axes:
        return _without_work(op, x, out_shape, count)

    def compute():
        shape = list(x.shape)
        current = x
        # Reduce the innermost run first so the earlier axes keep their positions.
        runs = _runs(axes)
        for n, (start, stop) in enumerate(reversed(runs)):
            last = n == len(runs) - 1
            outer, r, inner = (math.prod(shape[:start]), math.prod(shape[start:stop]),
                               math.prod(shape[stop:]))
            current = _pass(op, current, outer, r, inner, count if op == "mean" and last else 1,
                            x.dtype)
            shape[start:stop] = [1] * (stop - start)
        return view(current, out_shape)
    return ownership.tidy.run(compute)


def reduce_words(op: str, x: Tensor, axis, keepdims: bool, out_dtype: str) -> Tensor:
    """sum / max / min of an int32 or bool x as exact int32 words (bool words are int32 0 / 1),
    read as `out_dtype` (int32, or bool for a bool max / min)."""
    def compute():
        words = reduce(op, view(x, x.shape, "int32"), axis, keepdims)
        return view(words, words.shape, out_dtype)
    return ownership.tidy.run(compute)


def _without_work(op: str, x: Tensor, out_shape, count: int) -> Tensor:
    """Cases with nothing to reduce: an empty output, an empty axis, or no axes at all."""
    if math.prod(out_shape) == 0:
        return empty(out_shape, x.dtype)
    if count == 0:   # numpy: the sum of nothing is 0, the mean of nothing is nan
        return fill(out_shape, 0.0 if op == "sum" else float("nan"), x.dtype)
    # No axes: numpy returns the values unchanged.
    return ownership.tidy.run(lambda: view(copy(x), out_shape))


def reduce_sum(x, axis=None, keepdims=False): return reduce("sum", x, axis, keepdims)
def reduce_mean(x, axis=None, keepdims=False): return reduce("mean", x, axis, keepdims)
def reduce_max(x, axis=None, keepdims=False): return reduce("max", x, axis, keepdims)
def reduce_min(x, axis=None, keepdims=False): return reduce("min", x, axis, keepdims)
