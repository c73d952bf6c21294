"""ReversibleEmbedding: an Embedding (row lookup of ids) that, called with reverse=True, turns
vectors back into logits over the vocabulary: x @ embeddings.T (tie_weights) or
x @ reverse_embeddings, then logit_soft_cap * tanh(logits / logit_soft_cap) when one is set.
One layer is often called both ways (a language model's input embedding and its output head):
the graph hands compute_output_shape each call's `reverse` (shape_keywords)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import ModelFileError
from ...ops import elementwise, matmul
from ...tensors import ownership
from .embedding import Embedding
from ..base import register


@register("ReversibleEmbedding")
class ReversibleEmbedding(Embedding):
    shaders = ("embedding_rows.comp", "matmul.comp", "unary.comp", "binary.comp")
    shape_keywords = ("reverse",)
    weight_arrays = None

    @classmethod
    def weight_count(cls, config):
        return 1 + (not config.get("tie_weights", True))   # embeddings (+ reverse_embeddings)

    def __init__(self, spec, keras_major: int = 3):
        weights = list(spec.weights)
        self.tie_weights = bool(spec.config.get("tie_weights", True))
        if len(weights) != 1 + (not self.tie_weights):
            raise ModelFileError(f"Layer '{spec.name}' (ReversibleEmbedding) expects "
                                 f"{1 + (not self.tie_weights)} weight arrays, the file has "
                                 f"{len(weights)}.")
        # The Embedding part sees the table alone.
        super().__init__(dataclasses.replace(spec, weights=weights[:1]), keras_major)
        self.weights_np = weights
        self.spec = spec
        if self.option("reverse_dtype") not in (None, "float32"):
            raise self.unsupported(f"reverse_dtype={self.option('reverse_dtype')!r}")
        cap = self.option("logit_soft_cap")
        self.soft_cap = None if cap is None else float(cap)
        if self.soft_cap == 0.0:
            raise self.unsupported("logit_soft_cap=0")
        self.input_dim, self.output_dim = self.weights_np[0].shape
        reverse = {bool((node.kwargs or {}).get("reverse", False)) for node in spec.inbound_nodes}
        if self.mask_zero and True in reverse:
            # A mask is this layer's own only for its forward calls; kerasgl declares one
            # mask behaviour per layer.
            raise self.unsupported("mask_zero=True on a ReversibleEmbedding also called with "
                                   "reverse=True")
        if not self.tie_weights and self.weights_np[1].shape != (self.output_dim, self.input_dim):
            raise ModelFileError(f"Layer '{self.name}' (ReversibleEmbedding): reverse_embeddings "
                                 f"of shape {self.weights_np[1].shape}, expected "
                                 f"{(self.output_dim, self.input_dim)}.")

    @property
    def param_count(self) -> int:
        return int(sum(np.prod(w.shape) for w in self.weights_np))

    def compute_output_shape(self, input_shape, reverse=False):
        if not reverse:
            return tuple(input_shape) + (self.output_dim,)
        if not input_shape or input_shape[-1] != self.output_dim:
            raise self.shape_error(f"reverse=True expects the last input dimension to be "
                                   f"{self.output_dim}. Received {tuple(input_shape)}.")
        return tuple(input_shape[:-1]) + (self.input_dim,)

    def build(self, input_shape, reverse=False):
        table = self.weights_np[0].astype(np.float32)
        # Both stored as load_model's storage_dtype asks (float16: halves).
        self.table = self.upload(table, dtype=self.storage_dtype, name="embeddings")
        reverse_kernel = table.T if self.tie_weights else self.weights_np[1].astype(np.float32)
        self.reverse_kernel = self.upload(np.ascontiguousarray(reverse_kernel),
                                          dtype=self.storage_dtype, name="reverse_embeddings")
        self.built = True

    def call(self, inputs, reverse=False, **kwargs):
        if not reverse:
            return super().call(inputs)
        self.compute_output_shape(inputs.shape, reverse=True)
        if self.soft_cap is None:
            return matmul.dense(inputs, self.reverse_kernel)

        def capped():
            scaled = elementwise.div(matmul.dense(inputs, self.reverse_kernel), self.soft_cap)
            return elementwise.mul(elementwise.unary("tanh", scaled), self.soft_cap)
        return ownership.tidy.run(capped)
