"""Keras's category encodings that arg_ops.one_hot does not cover: digitize (the bucket of each
value among sorted boundaries: Discretization) and token counts along axis 1 (the "multi_hot" and
"count" encodings of CategoryEncoding and Discretization)."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .storage_ops import any_storage


def _check_tensor(what: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{what} takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()


@any_storage
def digitize(x: Tensor, boundaries: Tensor, count: int) -> Tensor:
    """int32, x's shape: how many of the first `count` boundaries (float32, in increasing order)
    are <= each value of x (float32, or int32 read as its float value), as jnp.digitize gives
    for increasing bins. NaN lands in the last bucket (`count`), where jnp's sort order puts it."""
    _check_tensor("digitize()", x)
    _check_tensor("digitize()", boundaries)
    if boundaries.dtype != "float32" or not 0 <= count <= boundaries.size:
        raise ShapeError(f"digitize: {count} boundaries from a {boundaries.dtype} tensor of "
                         f"{boundaries.size} values (float32, at least `count` of them).")
    out = empty(x.shape, "int32")
    if out.size:
        dispatch.run("discretization.comp", defines={"X_INT": x.dtype == "int32"},
                     buffers=[x, boundaries, out],
                     uniforms={"n": out.size, "bound_count": count},
                     groups=dispatch.groups_for(out.size))
    return out


@any_storage
def bincount(indices: Tensor, depth: int, binary: bool = False, weights: Tensor | None = None
             ) -> Tensor:
    """float32 [n, *rest, depth] from int32 indices [n, length, *rest]: how many of the `length`
    values along axis 1 equal each token of [0, depth) (binary: 1.0 where any does; weights, a
    float32 tensor of the indices' shape: the sum of their weights), the axis Keras's "count" /
    "multi_hot" encodings reduce. Values outside [0, depth) count for nothing, as in Keras on JAX
    (jax.nn.one_hot gives them a row of zeros)."""
    _check_tensor("bincount()", indices)
    if indices.dtype != "int32" or indices.ndim < 2 or depth < 1:
        raise ShapeError(f"bincount takes int32 indices of rank >= 2 and a depth >= 1. Received "
                         f"a {indices.dtype} tensor of shape {list(indices.shape)}, depth {depth}.")
    if weights is not None:
        _check_tensor("bincount()", weights)
        if binary or weights.dtype != "float32" or tuple(weights.shape) != tuple(indices.shape):
            raise ShapeError(f"bincount: weights must be float32 of the indices' shape "
                             f"{list(indices.shape)}, for counts (not binary). Received "
                             f"{weights.dtype} of shape {list(weights.shape)}.")
    n, length, rest = indices.shape[0], indices.shape[1], tuple(indices.shape[2:])
    out = empty((n,) + rest + (depth,))
    if out.size:
        dispatch.run("category_encoding.comp",
                     defines={"MULTI_HOT": binary, "WEIGHTED": weights is not None},
                     buffers=[indices, out] + ([weights] if weights is not None else []),
                     uniforms={"n": out.size, "depth": depth, "sample_len": length,
                               "inner": math.prod(rest)},
                     groups=dispatch.groups_for(out.size))
    return out


__all__ = ["bincount", "digitize"]
