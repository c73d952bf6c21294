"""Embedding: a row lookup in a table of vectors.

mask_zero=True: the lookup is the same, and the output carries Keras's mask (the positions whose
index is not 0, compute_mask) to the layers after it (compiler/masks.py). Out-of-range indices
raise InputValueError naming the layer and a bad index: the GPU counts them and predict reads the
count with its outputs (ops/embedding_rows.py), so the model is planned like any other; negative indices
in [-input_dim, -1] count from the end, as in Keras on JAX."""
from __future__ import annotations

import numpy as np

from ...errors import ModelFileError
from ...ops import embedding_rows, masking
from .. import config_values
from ..base import Layer, register


@register("Embedding")
class Embedding(Layer):
    shaders = ("embedding_rows.comp",)
    mask_behaviour = "drops"           # "computes" with mask_zero=True (set in __init__)
    mask_from = "values"
    ignores_mask_argument = True
    weight_arrays = 1

    @classmethod
    def normalize_keras2_config(cls, config):
        config.pop("input_length", None)    # Keras 2's; the input shape lives on the InputLayer
        return config

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if self.option("lora_rank"):
            raise self.unsupported("a LoRA-enabled Embedding (lora_rank)")
        self.expect_weights(1)
        table = self.weights_np[0]
        rows = config_values.positive_int(self, "input_dim")
        dim = config_values.positive_int(self, "output_dim")
        if table.shape != (rows, dim):
            raise ModelFileError(f"Layer '{self.name}' (Embedding): table of shape {table.shape}, "
                                 f"the config says input_dim={rows}, output_dim={dim}.")
        self.mask_zero = config_values.flag(self, "mask_zero", False)
        if self.mask_zero:
            self.mask_behaviour = "computes"

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.weights_np[0].shape[1],)

    def compute_mask(self, inputs, masks):
        """mask_zero: 1 where the index is not 0."""
        return masking.not_equal(inputs, 0)

    def build(self, input_shape):
        # Stored as load_model's storage_dtype asks (float16: halves, unpacked by the lookup).
        self.table = self.upload(self.weights_np[0].astype(np.float32), dtype=self.storage_dtype)
        self.built = True

    def call(self, inputs, **kwargs):
        # The range check is the GPU's, read at the end of predict (ops/gpu_checks.py).
        return embedding_rows.gather_rows(self.table, inputs, check=True,
                                  who=f"Layer '{self.name}' (Embedding)")
