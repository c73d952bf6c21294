"""Sorting and ranking along an axis, as jax computes them (keras.ops.sort, argsort, top_k,
argpartition, quantile / percentile / median and their NaN-skipping forms, searchsorted, digitize).

shaders/sort_rank.comp is a rank sort: every element counts the elements of its line that come
before it and writes itself there, O(len) work per element, exact and stable (jnp.argsort's and
lax.top_k's tie order: the lower index first). Rows of a few thousand elements are its range.
Quantiles sort their rows so, then shaders/quantile.comp reads them; searchsorted and digitize run
jax's own binary search (shaders/search_sorted.comp).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty, retag
from . import dispatch, layout
from .axes import normalize_axes
from .storage_ops import any_storage

METHODS = ("linear", "lower", "higher", "midpoint", "nearest")
MAX_Q = 32           # quantiles given as numbers travel as a uniform array
MAX_SEQ = 256        # so do sequences / bins given as numbers
_ORDERS = {"sort": 0, "top_k": 1, "partition": 2}


def _check(x, what: str, dtypes=("float32", "int32", "bool")) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}() takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    if x.dtype not in dtypes:
        raise ShapeError(f"{what} takes {' or '.join(dtypes)} tensors. Received a {x.dtype} tensor "
                         f"of shape {list(x.shape)}.")


def _line(x, axis: int, what: str):
    """(axis, len, inner) of x seen as (outer, len, inner) around `axis`."""
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        raise ShapeError(f"{what}: axis {axis} is out of range for shape {list(x.shape)}.")
    axis %= x.ndim
    return axis, x.shape[axis], math.prod(x.shape[axis + 1:])


def _rank_pass(x, axis, order: str, *, values=None, indices=None, ranks=None, keep=None,
               stage=0, kth=0):
    axis, length, inner = _line(x, axis, order)
    buffers = [x] + [b for b in (values, indices, ranks) if b is not None]
    if stage == 2:
        buffers = [x, ranks, indices]
    dispatch.run("sort_rank.comp",
                 defines={"INT_INPUT": x.dtype != "float32",      # int32 and bool: words
                          "ORDER": _ORDERS[order],
                          "STAGE": stage, "WRITE_VALUES": values is not None,
                          "WRITE_INDICES": indices is not None,
                          "INDEX_BINDING": 2 if values is not None else 1},
                 buffers=buffers,
                 uniforms={"n": x.size, "len": length, "inner": inner,
                           "keep": length if keep is None else keep, "kth": kth},
                 groups=dispatch.groups_for(x.size))


@any_storage
def sort(x: Tensor, axis: int = -1, values: bool = True, indices: bool = False):
    """jnp.sort (values) and / or jnp.argsort (int32 indices) of x along `axis`: the tensors asked
    for, a list when both."""
    _check(x, "sort")
    outs = [empty(x.shape, x.dtype) if values else None,
            empty(x.shape, "int32") if indices else None]
    if x.size:
        _rank_pass(x, axis, "sort", values=outs[0], indices=outs[1])
    outs = [t for t in outs if t is not None]
    return outs if len(outs) > 1 else outs[0]


@any_storage
def top_k(x: Tensor, k: int):
    """lax.top_k along the last axis: [the k largest values, descending (ties: the lower index
    first; lax's total order: +NaN above +inf, -NaN below -inf, +0 above -0), int32 indices]."""
    _check(x, "top_k")
    length = x.shape[-1] if x.ndim else 0
    if x.ndim == 0 or not 0 <= k <= length:
        raise ShapeError(f"top_k: k={k} for a tensor of shape {list(x.shape)} (0 <= k <= the last "
                         "axis).")
    shape = tuple(x.shape[:-1]) + (k,)
    values, indices = empty(shape, x.dtype), empty(shape, "int32")
    if values.size:
        _rank_pass(x, -1, "top_k", values=values, indices=indices, keep=k)
    return [values, indices]


@any_storage
def argpartition(x: Tensor, kth: int, axis: int = -1) -> Tensor:
    """jnp.argpartition: per line, the indices of the kth+1 smallest values as lax.top_k(-x) orders
    them, then the other indices in increasing order (jax's result, exactly)."""
    _check(x, "argpartition", ("float32", "int32"))
    axis, length, _ = _line(x, axis, "argpartition")
    if not -length <= kth < length:
        raise ShapeError(f"argpartition: kth={kth} is out of range for an axis of {length}.")
    kth %= length

    def compute():
        out = empty(x.shape, "int32")
        if out.size:
            ranks = empty(x.shape, "int32")
            _rank_pass(x, axis, "partition", ranks=ranks, stage=1)
            _rank_pass(x, axis, "partition", ranks=ranks, indices=out, stage=2, kth=kth)
        return out
    return ownership.tidy.run(compute)


def _rows_last(x: Tensor, axes: tuple) -> Tensor:
    """x with the `axes` moved last (kept axes in order) as (rows, len); a view when they are
    last already."""
    kept = [d for d in range(x.ndim) if d not in axes]
    length = math.prod(x.shape[d] for d in axes)
    if list(axes) != list(range(x.ndim - len(axes), x.ndim)):
        return ownership.tidy.run(lambda: layout.reshape(
            layout.transpose(x, tuple(kept) + tuple(axes)), (x.size // max(length, 1), length)))
    return layout.reshape(x, (x.size // max(length, 1), length))


def quantile_shape(shape, axes, q_shape, keepdims: bool) -> tuple:
    """The shape jnp.quantile returns: q's shape (() or (n,)), then the kept axes (ones where
    reduced with keepdims)."""
    rest = tuple(1 if d in axes else n for d, n in enumerate(shape) if keepdims or d not in axes)
    return tuple(q_shape) + rest


@any_storage
def quantile(x: Tensor, q, axis, method: str = "linear", keepdims: bool = False,
             skip_nan: bool = False, percent: bool = False) -> Tensor:
    """jnp.quantile (jnp.nanquantile when `skip_nan`; percentiles when `percent`) of x over `axis`
    (an int or a sequence of them). q: a number, a sequence of numbers, or a float32 tensor of
    rank 0 or 1."""
    _check(x, "quantile", ("float32", "int32"))
    if method not in METHODS:
        raise ShapeError(f"quantile: method={method!r}; kerasgl has {', '.join(METHODS)}.")
    axes = normalize_axes(axis, x.ndim) if x.ndim else ()
    if not axes or x.size == 0:
        raise ShapeError(f"quantile over axes {axis!r} of shape {list(x.shape)} (non-empty axes).")
    if isinstance(q, Tensor):
        _check(q, "quantile's q", ("float32",))
        if q.ndim > 1:
            raise ShapeError(f"quantile: q must have rank <= 1, not shape {list(q.shape)}.")
        q_shape, nq = tuple(q.shape), q.size
    else:
        values = np.asarray(q, dtype=np.float32)
        if values.ndim > 1 or values.size > MAX_Q:
            raise ShapeError(f"quantile: q must be a number or at most {MAX_Q} numbers.")
        if percent:
            values = values / np.float32(100)
        q_shape, nq = values.shape, values.size
    out_shape = quantile_shape(x.shape, axes, q_shape, keepdims)

    def compute():
        source = x if x.dtype == "float32" else _as_float(x)
        rows = _rows_last(source, axes)
        ordered = sort(rows, -1)
        flat = empty((nq, rows.shape[0]))
        buffers = [ordered, q, flat] if isinstance(q, Tensor) else [ordered, flat]
        uniforms = {"rows": rows.shape[0], "len": rows.shape[1], "nq": nq,
                    "q_divisor": 100.0 if percent else 1.0}
        if not isinstance(q, Tensor):
            uniforms["qs"] = tuple(float(v) for v in values.reshape(-1)) + (0.0,) * (MAX_Q - nq)
        if flat.size:
            dispatch.run("quantile.comp",
                         defines={"Q_BUFFER": isinstance(q, Tensor), "MAX_Q": MAX_Q,
                                  "SKIP_NAN": skip_nan, "METHOD": METHODS.index(method)},
                         buffers=buffers, uniforms=uniforms,
                         groups=dispatch.groups_for(flat.size))
        return layout.reshape(flat, out_shape)
    return ownership.tidy.run(compute)


def _as_float(x: Tensor) -> Tensor:
    out = empty(x.shape)
    dispatch.run("cast.comp", defines={"TO_INT": False}, buffers=[x, out],
                 uniforms={"n": out.size}, groups=dispatch.groups_for(out.size))
    return out


@any_storage
def search_sorted(sequence, values: Tensor, side: str = "left", digitize: bool = False) -> Tensor:
    """jnp.searchsorted(sequence, values, side) (or, with `digitize`, jnp.digitize(values,
    sequence)) as int32, for float32 values; the 1-D sequence is a float32 tensor or numbers."""
    _check(values, "searchsorted", ("float32",))
    if side not in ("left", "right"):
        raise ShapeError(f"searchsorted: side={side!r} (left or right).")
    if isinstance(sequence, Tensor):
        _check(sequence, "searchsorted's sequence", ("float32",))
        length = sequence.size if sequence.ndim == 1 else -1
    else:
        numbers = np.asarray(sequence, dtype=np.float32)
        length = numbers.size if numbers.ndim == 1 and numbers.size <= MAX_SEQ else -1
    if length <= 0:
        raise ShapeError(f"searchsorted: a non-empty 1-D sequence (at most {MAX_SEQ} numbers when "
                         "not a tensor).")
    out = empty(values.shape, "int32")
    if out.size:
        seq_buffer = isinstance(sequence, Tensor)
        uniforms = {"n": out.size, "seq_len": length,
                    "levels": int(np.ceil(np.log2(length + 1)))}
        if not seq_buffer:
            uniforms["seq"] = tuple(float(v) for v in numbers) + (0.0,) * (MAX_SEQ - length)
        dispatch.run("search_sorted.comp",
                     defines={"SEQ_BUFFER": seq_buffer, "MAX_SEQ": MAX_SEQ,
                              "RIGHT": digitize or side == "right", "DIGITIZE": digitize},
                     buffers=[values, sequence, out] if seq_buffer else [values, out],
                     uniforms=uniforms, groups=dispatch.groups_for(out.size))
    return out


@any_storage
def in_top_k(targets: Tensor, predictions: Tensor, k: int) -> Tensor:
    """keras.ops.in_top_k (JAX backend) as a bool tensor of targets' shape: int32 class ids,
    float32 predictions of shape targets.shape + (classes,)."""
    _check(targets, "in_top_k's targets", ("int32",))
    _check(predictions, "in_top_k's predictions", ("float32",))
    if predictions.ndim == 0 or tuple(predictions.shape[:-1]) != tuple(targets.shape):
        raise ShapeError(f"in_top_k: predictions of shape {list(predictions.shape)} for targets "
                         f"of shape {list(targets.shape)} (targets' shape + (classes,)).")

    def compute():
        words = empty(targets.shape, "int32")
        if words.size:
            dispatch.run("in_top_k.comp", buffers=[targets, predictions, words],
                         uniforms={"rows": words.size, "classes": predictions.shape[-1],
                                   "k": int(k)},
                         groups=dispatch.groups_for(words.size))
        return retag(words, "bool")
    return ownership.tidy.run(compute)
