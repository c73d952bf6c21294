"""GroupedQueryAttention: Keras's layer at inference, run as MultiHeadAttention.

Keras projects the key and value to num_key_value_heads heads and repeats each head
num_query_heads / num_key_value_heads times (ops.repeat on the head axis) before the attention.
Repeating the key / value kernels' head axis the same way at load gives the same projections, so
the rest is MultiHeadAttention's (num_heads = num_query_heads, key_dim = value_dim = head_dim,
rank-3 inputs, the same fused / Softmax-layer masking paths), with its ops and kernels."""
from __future__ import annotations

import numpy as np

from ...errors import ModelFileError
from ..base import register
from .multi_head_attention import MultiHeadAttention


@register("GroupedQueryAttention", "GroupQueryAttention")
class GroupedQueryAttention(MultiHeadAttention):
    # Keras's call takes query_mask / value_mask / key_mask but, unlike MultiHeadAttention's,
    # leaves the masks on its inputs alone.
    erases_input_masks = False
    keras_python_class = "GroupedQueryAttention"

    @classmethod
    def weight_count(cls, config):
        return (5 if config.get("use_gate") else 4) * (2 if config.get("use_bias", True) else 1)

    def __init__(self, spec, keras_major: int = 3):
        super(MultiHeadAttention, self).__init__(spec, keras_major)
        self.num_heads = int(self.option("num_query_heads"))
        self.num_kv_heads = int(self.option("num_key_value_heads"))
        if self.num_kv_heads <= 0 or self.num_heads % self.num_kv_heads:
            raise self.unsupported(f"num_query_heads={self.num_heads} with num_key_value_heads="
                                   f"{self.num_kv_heads} (not a multiple)")
        self.key_dim = self.value_dim = int(self.option("head_dim"))
        self.use_bias = bool(self.option("use_bias", True))
        self.use_gate = bool(self.option("use_gate", False))
        self.dropout = float(self.option("dropout", 0.0) or 0.0)
        window = self.option("sliding_window")
        self.sliding_window = int(window) if window is not None else None
        self.attention_axes_config = None
        self.output_shape_config = None
        self.returns_scores = self.call_flag("return_attention_scores")
        self.weights_np = self._repeated_kv_heads(list(self.weights_np))
        self._check_weights()

    def _repeated_kv_heads(self, weights: list) -> list:
        names = self._projection_names()
        per = 2 if self.use_bias else 1
        self.expect_weights(len(names) * per)
        repeats = self.num_heads // self.num_kv_heads
        for name in ("key", "value"):
            at = names.index(name) * per
            kernel = weights[at]
            if kernel.ndim != 3 or kernel.shape[1:] != (self.num_kv_heads, self.key_dim):
                raise ModelFileError(f"Layer '{self.name}' (GroupedQueryAttention): the {name} "
                                     f"kernel of shape {kernel.shape} does not match "
                                     f"num_key_value_heads={self.num_kv_heads}, "
                                     f"head_dim={self.key_dim}.")
            weights[at] = np.repeat(kernel, repeats, axis=1)
            if self.use_bias:
                weights[at + 1] = np.repeat(weights[at + 1], repeats, axis=0)
        return weights

    @property
    def param_count(self) -> int:
        return int(sum(np.prod(w.shape) for w in self.spec.weights))

    def _check_shapes(self, query, value, key):
        if len(query) != 3:
            raise self.shape_error(f"expects query, value and key of rank 3 (batch, sequence, "
                                   f"features). Received query {query}.")
        super()._check_shapes(query, value, key)
