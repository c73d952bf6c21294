"""Data movement that reads each output word from one input word, or writes a fill value:
through an int32 index map computed on the host (gather_map: flips, rolls, triangles, diagonals,
stacks and splits of any value-independent kind) or through indices held in a tensor (take,
take_along_axis). Words are copied as raw bits, so float32 and int32 tensors alike.

A map is read once per output row: the output is `rows` rows of `inner_out` words, row r reading
row r of the source (of `inner_src` words), so one map serves every batch size when the operation
works sample by sample.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .storage_ops import any_storage, to_buffer

_INT_MIN_BITS = 0x80000000
_NAN_BITS = 0x7fc00000


def fill_bits(value, dtype: str) -> int:
    """The 32 bits of `value` as a `dtype` word."""
    if dtype == "bool":
        return int(bool(value))            # a bool is a 0 / 1 word
    kind = np.float32 if dtype == "float32" else np.int32
    return int(np.array([value], kind).view(np.uint32)[0])


def out_of_range_bits(dtype: str) -> int:
    """What jnp.take's "fill" mode gives for an index out of range: NaN, INT_MIN for int32,
    True for bool."""
    return {"float32": _NAN_BITS, "bool": 1}.get(dtype, _INT_MIN_BITS)


def _checked(t, what):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what} takes kerasgl Tensors, not {type(t).__name__}.")
    t._check_alive()


def side_by_side(sources, rows: int) -> Tensor:
    """One buffer of `rows` rows, row r holding row r of every source in turn (each source seen
    as `rows` rows of its size / rows words)."""
    for t in sources:
        _checked(t, "side_by_side")
    dtype = sources[0].dtype
    if any(t.dtype != dtype for t in sources) or any(t.size % max(rows, 1) for t in sources):
        raise ShapeError(f"side_by_side: sources {[(list(t.shape), t.dtype) for t in sources]} do "
                         f"not split into {rows} rows of one dtype.")
    widths = [t.size // max(rows, 1) for t in sources]

    def compute():
        out = empty((rows * sum(widths),), dtype)
        offset = 0
        for t, width in zip(sources, widths):
            if t.size:
                staged = to_buffer(t) if t.storage == "texture" else t
                dispatch.run("word_gather.comp", defines={"PLACE": True}, buffers=[staged, out],
                             uniforms={"n": t.size, "width": width, "row": sum(widths),
                                       "offset": offset},
                             groups=dispatch.groups_for(t.size))
            offset += width
        return out
    return ownership.tidy.run(compute)


@any_storage
def gather_map(source: Tensor, index_map: Tensor, out_shape, rows: int, fill: int = 0,
               dtype: str | None = None) -> Tensor:
    """out (out_shape, dtype: source's by default) seen as `rows` rows of index_map.size words:
    word c of row r is source[r * (source.size / rows) + index_map[c]], or the bits `fill` where
    index_map[c] < 0."""
    _checked(source, "gather_map")
    _checked(index_map, "gather_map")

    def compute():
        out = empty(tuple(out_shape), dtype or source.dtype)
        if index_map.dtype != "int32" or out.size != rows * index_map.size \
                or (rows and source.size % rows):
            raise ShapeError(f"gather_map: a map of {index_map.size} {index_map.dtype} words does "
                             f"not make {rows} rows of shape {list(out_shape)} from {source.size} "
                             "words.")
        if not out.size:
            return out
        dispatch.run("word_gather.comp", defines={"PLACE": False},
                     buffers=[source if source.size else out, index_map, out],
                     uniforms={"n": out.size, "inner_out": index_map.size,
                               "inner_src": source.size // rows if rows else 0, "fill": fill},
                     groups=dispatch.groups_for(out.size))
        return out
    return ownership.tidy.run(compute)


@any_storage
def take(x: Tensor, indices: Tensor, axis: int, along: bool = False) -> Tensor:
    """jnp.take(x, indices, axis) (along=False: out = x.shape[:axis] + indices.shape +
    x.shape[axis+1:]) or jnp.take_along_axis(x, indices, axis) (along=True: indices has x's shape
    but along `axis`), indices int32; out-of-range indices give NaN / INT_MIN as jnp does."""
    _checked(x, "take")
    _checked(indices, "take")
    if indices.dtype != "int32" or not -x.ndim <= axis < x.ndim:
        raise ShapeError(f"take: int32 indices and an axis of x's {x.ndim} are needed. Received "
                         f"{indices.dtype} indices, axis {axis}.")
    axis %= x.ndim
    if along:
        expected = x.shape[:axis] + indices.shape[axis:axis + 1] + x.shape[axis + 1:]
        if indices.ndim != x.ndim or tuple(indices.shape) != tuple(expected):
            raise ShapeError(f"take_along_axis: indices of shape {list(indices.shape)} do not fit "
                             f"x of shape {list(x.shape)} along axis {axis}.")
        out_shape, count = expected, indices.shape[axis]
    else:
        out_shape = x.shape[:axis] + tuple(indices.shape) + x.shape[axis + 1:]
        count = indices.size
    out = empty(out_shape, x.dtype)
    if not out.size:
        return out
    dispatch.run("take.comp", defines={"ALONG": along},
                 buffers=[x if x.size else out, indices, out],
                 uniforms={"n": out.size, "inner": math.prod(x.shape[axis + 1:]),
                           "count": count, "axis_len": x.shape[axis],
                           "fill": out_of_range_bits(x.dtype)},
                 groups=dispatch.groups_for(out.size))
    return out
