"""keras.ops.nn.dot_product_attention (keras/src/ops/nn.py) as recorded in Keras 3 graphs, computed
as Keras's JAX backend does it: scaled scores, the boolean mask or causal mask filled with
jax.nn.dot_product_attention's large negative value, softmax, the weighted sum of values; grouped
key/value heads repeated to the query's heads.
"""
from __future__ import annotations

import math

import numpy as np

from ...ops import elementwise, softmax, tile_repeat_pad
from ...ops.attention import attention_combine, attention_weights, mask_and
from ...tensors import ownership
from ...tensors.tensor import retag, tensor
from ..node import OpNode, _shape, register_op
from ..numpy.products import contract

_MASK_FILL = -0.7 * float(np.finfo(np.float32).max)   # jax.nn.dot_product_attention's


@register_op("DotProductAttention")
class DotProductAttentionOp(OpNode):
    """softmax(q.k * scale + bias, masked) . v over (batch, time, heads, depth) tensors, as
    jax.nn.dot_product_attention (masked logits become -0.7 * float32 max). Without a bias:
    ops/attention.py's kernels; with one: matmuls, the bias added, the mask applied as
    logits * m + fill * (1 - m) (exact: m is 0 or 1), a softmax. Grouped heads (fewer key /
    value heads than query heads) repeat each key head for its group, as jax does."""
    params = ("query", "key", "value", "bias", "mask", "scale", "is_causal")
    shaders = ("attention_softmax.comp", "attention_combine.comp", "attention_mask.comp",
               "matmul.comp", "transpose.comp", "binary.comp", "softmax.comp")

    def output_shape(self, bound):
        q, k, v = (_shape(bound[n]) for n in ("query", "key", "value"))
        for name in ("query", "key", "value", "bias"):
            dtype = getattr(_shape(bound.get(name)), "dtype", "float32")
            if bound.get(name) is not None and dtype != "float32":
                raise self.unsupported(f"a {_shape(bound[name]).dtype} {name}")
        if len(q) != 4 or len(k) != 4 or len(v) != 4:
            raise self.shape_error("query, key and value must be 4-D (batch, time, heads, depth).")
        if None not in (q[2], k[2]) and q[2] % k[2]:
            raise self.shape_error(f"{q[2]} query heads do not share {k[2]} key heads.")
        for name in ("bias", "mask"):
            if bound.get(name) is not None and len(_shape(bound[name])) != 4:
                # Keras's jax fallback reads a 3-D one as (batch, 1, T, S) or (batch, N, 1, S),
                # not by numpy's broadcasting: only the unambiguous 4-D form runs here
                raise self.unsupported(f"a {name} of rank {len(_shape(bound[name]))} (only 4-D)")
        if self.opt(bound, "attn_logits_soft_cap") is not None:
            raise self.unsupported("attn_logits_soft_cap")
        return q[:3] + v[3:]

    def run(self, bound):
        q, k, v = bound["query"], bound["key"], bound["value"]
        bias = bound.get("bias")
        scale = self.opt(bound, "scale")
        scale = 1.0 / math.sqrt(k.shape[-1]) if scale is None else float(scale)
        causal = bool(self.opt(bound, "is_causal", False))
        _, T, N, _ = q.shape
        S = k.shape[1]

        def compute():
            mask, key, value = bound.get("mask"), k, v
            if k.shape[2] != N:           # grouped heads: query head n reads key head n // G
                key = tile_repeat_pad.repeat(k, N // k.shape[2], 2)
                value = tile_repeat_pad.repeat(v, N // k.shape[2], 2)
            if mask is not None and mask.dtype == "bool":
                mask = retag(mask, "int32")     # the same 0 / 1 words (tensor.py)
            if bias is None:
                weights = attention_weights(q, key, scale=scale, mask=mask, causal=causal,
                                            mask_mode="replace", mask_fill=_MASK_FILL)
                return attention_combine(weights, value)
            logits = elementwise.add(elementwise.mul(
                contract([(q, "btnh"), (key, "bsnh")], "bnts"), scale), bias)
            if mask is not None or causal:
                shape = logits.shape
                keep = mask_and(mask, None, shape) if mask is not None else None
                if causal:
                    tril = tensor(np.tril(np.ones((T, S), np.float32)))
                    keep = tril if keep is None else elementwise.mul(keep, tril)
                drop = elementwise.sub(1.0, keep)
                logits = elementwise.add(elementwise.mul(logits, keep),
                                         elementwise.mul(drop, _MASK_FILL))
            probs = softmax.softmax(logits, -1)
            return contract([(probs, "bnts"), (value, "bsnh")], "btnh")
        return ownership.tidy.run(compute)
