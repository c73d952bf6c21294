"""Embedding: a row lookup in a table of vectors.

mask_zero: the lookup is the same; the mask Keras would attach for later layers is not produced
(masking is not supported yet), so a model whose later layers consume that mask can differ from
Keras. Out-of-range indices raise ShapeError after the lookup (the GPU counts them; see
ops/gather.py); negative indices in [-input_dim, -1] count from the end, as in Keras on JAX."""
from __future__ import annotations

import numpy as np

from ..ops import gather
from .base import Layer, register


@register("Embedding")
class Embedding(Layer):
    shaders = ("gather.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if self.option("lora_rank"):
            raise self.unsupported("a LoRA-enabled Embedding (lora_rank)")
        self.expect_weights(1)
        table = self.weights_np[0]
        if table.ndim != 2:
            from ..errors import ModelFileError
            raise ModelFileError(f"Layer '{self.name}' (Embedding): table of shape {table.shape} is not 2-D.")
        self.mask_zero = bool(self.option("mask_zero", False))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.weights_np[0].shape[1],)

    def build(self, input_shape):
        self.table = self.upload(self.weights_np[0].astype(np.float32))
        self.built = True

    def call(self, inputs, **kwargs):
        return gather.gather_rows(self.table, inputs, check=True)
