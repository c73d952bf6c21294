"""Grouped-query attention without repeating the keys and values: each key/value head serves
`groups` query heads.

KerasHub repeats every key/value head `groups` times (ops.repeat) before a plain attention. Here
the query heads are folded instead: queries (batch, T, kv_heads * groups, depth) are seen as
(batch, T * groups, kv_heads, depth), query head kv * groups + j of token t becoming row
t * groups + j of head kv, so ops/attention.py's kernels read the keys and values (and a cache
of them) with their own kv_heads. The masks follow the rows: `band` gives row t * groups + j
token t's causal (and sliding window) mask.

Gemma 2's logit soft-capping, cap * tanh(score / cap) before the softmax, is composed from
matmul, elementwise and softmax ops (the fused kernel has no such step), masked as keras's
Softmax layer masks: -1e9, then zero weights.
"""
from __future__ import annotations

import numpy as np

from ..ops import attention as attn_ops
from ..ops import elementwise, layout, matmul, softmax
from ..tensors import ownership
from ..tensors.tensor import Tensor, view

SOFTMAX_LAYER_FILL = -1e9                  # keras.layers.Softmax with a mask
DOT_PRODUCT_ATTENTION_FILL = float(-0.7 * np.finfo(np.float32).max)   # jax's fused attention


def band(first: int, tokens: int, slots: int, groups: int, window: int | None) -> np.ndarray:
    """(tokens * groups, slots) float32 0 / 1: row t * groups + j (token first + t) keeps slot s
    when s <= first + t and, with a sliding window, first + t - s < window."""
    position = first + np.arange(tokens)[:, None]
    slot = np.arange(slots)[None, :]
    keep = slot <= position
    if window is not None:
        keep &= position - slot < window
    return np.repeat(keep.astype(np.float32), groups, axis=0)


def _fold(q: Tensor, groups: int) -> Tensor:
    batch, tokens, heads, depth = q.shape
    if groups == 1:
        return q
    grouped = view(q, (batch, tokens, heads // groups, groups, depth))
    rows = layout.transpose(grouped, (0, 1, 3, 2, 4))
    return view(rows, (batch, tokens * groups, heads // groups, depth))


def _unfold(out: Tensor, groups: int, tokens: int) -> Tensor:
    batch, rows, kv_heads, depth = out.shape
    if groups == 1:
        return out
    split = view(out, (batch, tokens, groups, kv_heads, depth))
    heads = layout.transpose(split, (0, 1, 3, 2, 4))
    return view(heads, (batch, tokens, kv_heads * groups, depth))


def grouped_attention(q: Tensor, k: Tensor, v: Tensor, *, scale: float, mask: Tensor | None,
                      fill: float, zero_masked: bool, soft_cap: float | None) -> Tensor:
    """q (batch, T, heads, depth), k and v (batch, S, kv_heads, depth) -> (batch, T, heads,
    depth), a new tensor. mask: broadcastable to (batch, 1, T * groups, S) in the folded rows
    (`band`), 1 keeps."""
    groups = q.shape[2] // k.shape[2]

    def compute():
        folded = _fold(q, groups)
        if soft_cap is None:
            weights = attn_ops.attention_weights(folded, k, scale=scale, mask=mask,
                                                 mask_mode="replace", mask_fill=fill,
                                                 zero_masked=zero_masked)
        else:
            weights = _soft_capped_weights(folded, k, scale, mask, soft_cap, fill, zero_masked)
        return _unfold(attn_ops.attention_combine(weights, v), groups, q.shape[1])
    return ownership.tidy.run(compute)


def _soft_capped_weights(q, k, scale, mask, soft_cap, fill, zero_masked) -> Tensor:
    """softmax(cap * tanh((scale * q) . k / cap)) as keras_hub's Gemma attention computes it,
    laid out (batch, kv_heads, rows, S) as attention_weights' are (inside grouped_attention's
    tidy scope, which frees the steps)."""
    scaled = elementwise.mul(q, scale)
    queries = layout.transpose(scaled, (0, 2, 1, 3))       # (B, KV, rows, depth)
    keys = layout.transpose(k, (0, 2, 3, 1))               # (B, KV, depth, S)
    scores = matmul.matmul(queries, keys)
    capped = elementwise.mul(elementwise.unary("tanh", elementwise.div(scores, soft_cap)),
                             soft_cap)
    if mask is not None:
        # where(mask, score, fill): the score times 1, or 0 plus the fill.
        capped = elementwise.add(elementwise.mul(capped, mask),
                                 elementwise.mul(elementwise.sub(mask, 1.0), -fill))
    weights = softmax.softmax(capped, axis=-1)
    if mask is not None and zero_masked:
        weights = elementwise.mul(weights, mask)
    return weights
