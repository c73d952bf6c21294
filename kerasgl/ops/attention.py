"""Attention kernels: masked softmax of query-key scores, and the weighted sum of values.

Both work on the layout jax.nn.dot_product_attention uses, with every batch-like dimension folded
into G:  query (G, T, N, H), key (G, S, N, H), value (G, S, N, Hv), weights (G, N, T, S), output
(G, T, N, Hv). Layers reshape / transpose into this layout (a free view in the usual cases) and
read Keras's score layout straight off the weights tensor.

Masks follow Keras: a position is kept where the mask is nonzero (bool inputs arrive as int32,
so masks may be int32 or float32). What a masked score becomes differs between Keras code paths,
so the caller says: `mask_mode="replace"` sets it to `mask_fill` (the Softmax layer's -1e9, the
fused dot-product-attention's -0.7 * float32 max), `"subtract"` lowers it by `mask_fill` (the
Attention layer's `scores - 1e9`); `zero_masked` then zeroes masked weights after the softmax
(the Softmax layer does, so a fully masked row gives zeros instead of a uniform average).
"""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .elementwise import broadcast_shape, broadcast_strides
from .storage_ops import any_storage

MAX_MASK_RANK = 8
MASK_MODES = ("replace", "subtract")


def _check(x, what: str, rank: int | None = None, dtypes=("float32",)) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"attention ops take kerasgl Tensors; {what} is a {type(x).__name__}.")
    x._check_alive()
    if x.dtype not in dtypes and not (x.dtype == "bool" and "int32" in dtypes):   # 0 / 1 words
        raise ShapeError(f"attention: {what} must be {' or '.join(dtypes)}. Received {x.dtype} "
                         f"of shape {list(x.shape)}.")
    if rank is not None and x.ndim != rank:
        raise ShapeError(f"attention: {what} must have rank {rank}. Received shape {list(x.shape)}.")
    return x


def mask_strides(mask: Tensor, shape) -> list[int]:
    """Element strides of `mask` broadcast (numpy rules) to `shape`, with kerasgl's error."""
    if mask.ndim > len(shape) or broadcast_shape(mask.shape, shape) != tuple(shape):
        raise ShapeError(f"attention: a mask of shape {list(mask.shape)} does not broadcast to "
                         f"{list(shape)}.")
    return broadcast_strides(mask.shape, shape)


@any_storage
def attention_weights(query: Tensor, key: Tensor, *, scale: float = 1.0, additive: bool = False,
                      tanh_scale: float = 1.0, coef: Tensor | None = None,
                      mask: Tensor | None = None, causal: bool = False, window: int | None = None,
                      mask_mode: str = "replace", mask_fill: float = -1e9,
                      zero_masked: bool = False) -> Tensor:
    """softmax over S of the scores of query (G, T, N, H) against key (G, S, N, H): (G, N, T, S).

    Dot scores (default): scale * sum_h q*k. Additive scores: scale * sum_h c_h *
    tanh(tanh_scale * (q + k)), with c_h from `coef` (shape (H,)) or 1.
    mask: broadcastable to (G, N, T, S), int32 or float32, nonzero keeps. causal keeps s <= t;
    window keeps |t - s| < window. See the module doc for mask_mode / mask_fill / zero_masked.
    """
    query, key = _check(query, "query", 4), _check(key, "key", 4)
    G, T, N, H = query.shape
    if key.shape[0] != G or key.shape[2:] != (N, H):
        raise ShapeError(f"attention: key of shape {list(key.shape)} does not match query of shape "
                         f"{list(query.shape)} (expected (G, S, N, H) = ({G}, S, {N}, {H})).")
    S = key.shape[1]
    if mask_mode not in MASK_MODES:
        raise ValueError(f"mask_mode must be one of {MASK_MODES}, not {mask_mode!r}.")
    if coef is not None:
        coef = _check(coef, "coef", 1)
        if not additive or coef.shape != (H,):
            raise ShapeError(f"attention: coef must have shape [{H}] and go with additive scores. "
                             f"Received {list(coef.shape)}.")
    out_shape = (G, N, T, S)
    strides = [0, 0, 0, 0]
    if mask is not None:
        mask = _check(mask, "mask", dtypes=("float32", "int32"))
        strides = mask_strides(mask, out_shape)
    if window is not None and int(window) <= 0:
        raise ShapeError(f"attention: window must be a positive integer. Received {window}.")
    out = empty(out_shape)
    if out.size == 0:
        return out
    if H == 0:
        raise ShapeError(f"attention with an empty depth is not supported (query {list(query.shape)}).")
    defines = {
        "ADDITIVE": additive, "HAS_COEF": coef is not None, "HAS_MASK": mask is not None,
        "MASK_INT": mask is not None and mask.dtype != "float32", "CAUSAL": bool(causal),
        "WINDOW": window is not None, "MASK_SUBTRACT": mask_mode == "subtract",
        "ZERO_MASKED": bool(zero_masked), "VEC4": not additive and H % 4 == 0,
    }
    uniforms = {
        "G": G, "N": N, "T": T, "S": S, "H": H, "scale": float(scale),
        "tanh_scale": float(tanh_scale), "mask_fill": float(mask_fill),
        "m_sg": strides[0], "m_sn": strides[1], "m_st": strides[2], "m_ss": strides[3],
        "window": int(window or 0),
    }
    # Unused bindings still need a buffer bound: the output is a harmless stand-in.
    buffers = [query, key, coef if coef is not None else out, mask if mask is not None else out, out]
    dispatch.run("attention_softmax.comp", defines=defines, buffers=buffers, uniforms=uniforms,
                 groups=dispatch.groups_for(G * N * T))
    return out


@any_storage
def attention_combine(weights: Tensor, value: Tensor, row_mask: Tensor | None = None) -> Tensor:
    """out[g, t, n, h] = sum_s weights[g, n, t, s] * value[g, s, n, h]: (G, T, N, Hv).
    row_mask: broadcastable to (G, T), int32 or float32; rows where it is 0 come out as zeros."""
    weights, value = _check(weights, "weights", 4), _check(value, "value", 4)
    G, N, T, S = weights.shape
    if value.shape[:3] != (G, S, N):
        raise ShapeError(f"attention: value of shape {list(value.shape)} does not match weights of "
                         f"shape {list(weights.shape)} (expected ({G}, {S}, {N}, H)).")
    H = value.shape[3]
    r_strides = [0, 0]
    if row_mask is not None:
        row_mask = _check(row_mask, "row_mask", dtypes=("float32", "int32"))
        r_strides = mask_strides(row_mask, (G, T))
    out = empty((G, T, N, H))
    if out.size == 0:
        return out
    defines = {"ROW_MASK": row_mask is not None,
               "MASK_INT": row_mask is not None and row_mask.dtype != "float32", "VEC4": H % 4 == 0}
    uniforms = {"G": G, "N": N, "T": T, "S": S, "H": H, "r_sg": r_strides[0], "r_st": r_strides[1]}
    blocks = math.ceil(H / 4)
    buffers = [weights, value, row_mask if row_mask is not None else out, out]
    dispatch.run("attention_combine.comp", defines=defines, buffers=buffers, uniforms=uniforms,
                 groups=dispatch.groups_for(G * T * N * blocks))
    return out


@any_storage
def mask_and(a: Tensor, b: Tensor | None, shape) -> Tensor:
    """float32 0/1 of `shape`: 1 where `a` (and `b`, if given) are nonzero, both broadcast to
    `shape` by numpy's rules. With b None this broadcasts one mask and makes it float."""
    shape = tuple(int(d) for d in shape)
    if len(shape) > MAX_MASK_RANK:
        raise ShapeError(f"attention masks have rank at most {MAX_MASK_RANK}. Received {list(shape)}.")
    a = _check(a, "mask", dtypes=("float32", "int32"))
    a_strides = mask_strides(a, shape)
    if b is not None:
        b = _check(b, "mask", dtypes=("float32", "int32"))
        b_strides = mask_strides(b, shape)
    else:
        b_strides = [0] * len(shape)
    out = empty(shape)
    if out.size == 0:
        return out

    def pad(values, fill):
        return tuple(values) + (fill,) * (MAX_MASK_RANK - len(values))

    defines = {"HAS_B": b is not None, "A_INT": a.dtype != "float32",
               "B_INT": b is not None and b.dtype != "float32"}
    uniforms = {"n": out.size, "rank": len(shape), "out_shape": pad(shape, 1),
                "a_strides": pad(a_strides, 0), "b_strides": pad(b_strides, 0)}
    dispatch.run("attention_mask.comp", defines=defines,
                 buffers=[a, b if b is not None else a, out], uniforms=uniforms,
                 groups=dispatch.groups_for(out.size))
    return out
