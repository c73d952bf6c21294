"""Dense attention layers: Attention (Luong, dot or concat scores) and AdditiveAttention
(Bahdanau).

The inputs [query, value(, key)] are viewed in the layout of ops/attention.py — query (G, T, 1, H),
key (G, S, 1, H), value (G, S, 1, Hv), batch-like dimensions folded into G — where the fused masked
softmax and the weighted sum run, and the results are viewed back in Keras's shapes.

Masks arrive as `mask=[query_mask, value_mask]`: recorded in the model file, or propagated by the
graph from Embedding(mask_zero=True) or Masking (compiler/masks.py). A position is kept where the
mask is nonzero. Masked scores have 1e9 subtracted (no zeroing), and the output rows whose query
is masked are zeroed, as Keras does.
"""
from __future__ import annotations

import math

import numpy as np

from ...ops import attention as attn_ops
from ...tensors import ownership
from ...tensors.tensor import view
from ..base import Layer, register

SUBTRACTED_MASK = 1e9                                            # Attention: scores - 1e9


class _BaseDenseAttention(Layer):
    """Shared call of Attention and AdditiveAttention: inputs [query, value] or
    [query, value, key], optional mask=[query_mask, value_mask(, key_mask)]."""
    shaders = ("attention_softmax.comp", "attention_combine.comp")
    # Keras 3 passes mask=[one per input]; the output carries the query's. tf.keras treats masks
    # differently: refused there.
    mask_behaviour = "consumes"
    mask_argument = "mask_list"
    keras2_mask_refused = True

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.returns_scores = self.call_flag("return_attention_scores")
        # Keras 2 saved causal masking in the config (`causal`); Keras 3 takes it per call.
        self.config_causal = bool(self.option("causal", False))

    def _inputs(self, inputs):
        if not isinstance(inputs, (list, tuple)) or not 2 <= len(inputs) <= 3:
            raise self.shape_error("must be called on a list [query, value] or [query, value, key].")
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        return q, v, k

    def _check_shapes(self, q, v, k):
        if len(q) < 3 or len(v) != len(q) or len(k) != len(q):
            raise self.shape_error(f"expects query, value and key of one rank >= 3. Received "
                                   f"query {tuple(q)}, value {tuple(v)}, key {tuple(k)}.")
        if q[-1] is not None and k[-1] is not None and q[-1] != k[-1]:
            raise self.shape_error(f"query and key must have the same last dimension. Received "
                                   f"query {tuple(q)} and key {tuple(k)}.")
        if tuple(v[:-1]) != tuple(k[:-1]) and None not in tuple(v[:-1]) + tuple(k[:-1]):
            raise self.shape_error(f"value and key must match in every dimension but the last. "
                                   f"Received value {tuple(v)} and key {tuple(k)}.")

    def compute_output_shape(self, input_shape, return_attention_scores=None, **kwargs):
        q, v, k = self._inputs(input_shape)
        self._check_shapes(q, v, k)
        out = tuple(q[:-1]) + (v[-1],)
        returns = self.returns_scores if return_attention_scores is None else bool(return_attention_scores)
        return [out, tuple(q[:-1]) + (k[-2],)] if returns else out

    def score_options(self) -> dict:
        raise NotImplementedError

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False, **kwargs):
        q, v, k = self._inputs(inputs)
        self._check_shapes(q.shape, v.shape, k.shape)
        if mask is not None and not isinstance(mask, (list, tuple)):
            raise self.shape_error("mask must be a list [query_mask, value_mask].")
        q_mask = mask[0] if mask else None
        v_mask = mask[1] if mask and len(mask) > 1 else None
        causal = bool(use_causal_mask) or self.config_causal
        G = math.prod(q.shape[:-2])
        Tq, Tv = q.shape[-2], v.shape[-2]

        def compute():
            qc = view(q, (G, Tq, 1, q.shape[-1]))
            kc = view(k, (G, Tv, 1, k.shape[-1]))
            vc = view(v, (G, Tv, 1, v.shape[-1]))
            scores_mask = None
            if v_mask is not None:
                if v_mask.shape != v.shape[:-1]:
                    raise self.shape_error(
                        f"value mask of shape {list(v_mask.shape)} does not match value of shape "
                        f"{list(v.shape)}.")
                if q.ndim != 3:
                    raise self.unsupported(f"a value mask with inputs of rank {q.ndim} (Keras "
                                           "broadcasts it against other axes there)")
                scores_mask = view(v_mask, (G, 1, 1, Tv))
            row_mask = None
            if q_mask is not None:
                if q_mask.shape != q.shape[:-1]:
                    raise self.shape_error(
                        f"query mask of shape {list(q_mask.shape)} does not match query of shape "
                        f"{list(q.shape)}.")
                row_mask = view(q_mask, (G, Tq))
            weights = attn_ops.attention_weights(
                qc, kc, mask=scores_mask, causal=causal, mask_mode="subtract",
                mask_fill=SUBTRACTED_MASK, zero_masked=False, **self.score_options())
            combined = attn_ops.attention_combine(weights, vc, row_mask=row_mask)
            output = view(combined, q.shape[:-1] + (v.shape[-1],))
            if return_attention_scores:
                return [output, view(weights, q.shape[:-1] + (Tv,))]
            return output
        return ownership.tidy.run(compute)


@register("Attention")
class Attention(_BaseDenseAttention):
    """Luong attention: dot scores (optionally times a learned scale) or concat scores
    concat_score_weight * sum(tanh(scale * (q + k)))."""

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.use_scale = bool(self.option("use_scale", False))
        self.score_mode = self.option("score_mode", "dot") or "dot"
        if self.score_mode not in ("dot", "concat"):
            raise self.unsupported(f"score_mode={self.score_mode!r}")
        count = int(self.use_scale) + int(self.score_mode == "concat")
        self.expect_weights(count)
        weights = list(self.weights_np)
        self.scale = float(np.asarray(weights.pop(0)).reshape(())) if self.use_scale else None
        self.concat_weight = float(np.asarray(weights.pop(0)).reshape(())) \
            if self.score_mode == "concat" else None

    def score_options(self) -> dict:
        if self.score_mode == "dot":
            return {"scale": self.scale if self.scale is not None else 1.0}
        return {"additive": True, "scale": self.concat_weight,
                "tanh_scale": self.scale if self.scale is not None else 1.0}


@register("AdditiveAttention")
class AdditiveAttention(_BaseDenseAttention):
    """Bahdanau attention: scores sum(scale * tanh(q + k)), scale a learned vector (or 1)."""

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.use_scale = bool(self.option("use_scale", True))
        self.expect_weights(1 if self.use_scale else 0)
        self.coef = None

    def build(self, input_shape, *args, **kwargs):
        if self.use_scale:
            self.coef = self.upload(np.asarray(self.weights_np[0], np.float32).reshape(-1))
        self.built = True

    def _check_shapes(self, q, v, k):
        super()._check_shapes(q, v, k)
        if self.use_scale and q[-1] is not None and q[-1] != self.weights_np[0].shape[-1]:
            raise self.shape_error(f"expects a query with last dimension "
                                   f"{self.weights_np[0].shape[-1]} (the scale's length). Received "
                                   f"query {tuple(q)}.")

    def score_options(self) -> dict:
        return {"additive": True, "coef": self.coef}
