"""KerasHub's RMS normalisations: LlamaLayerNorm, MistralLayerNormalization (x / rms(x) * scale)
and Gemma's RMSNormalization (x / rms(x) * (1 + scale)), run by kerasgl's RMSNormalization
(keras.layers.RMSNormalization's formula, the mean of squares with no mean subtracted) with the
scale, plus 1 for Gemma (`offset`, added at load in float32 as Gemma adds it)."""
from __future__ import annotations

import numpy as np

from .hub_layer import HubLayer


class ScaledRMSNorm(HubLayer):
    mask_behaviour = "pass_through"

    @classmethod
    def weight_paths(cls, config):
        return ((),)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        offset = np.float32(self.option("offset", 0.0))
        self.norm = self.part("RMSNormalization", "norm", {
            "epsilon": float(self.option("epsilon", 1e-6)), "axis": -1},
            1, prepare=lambda scale: (np.asarray(scale, np.float32) + offset).astype(np.float32))
        self.check_all_taken()

    def compute_output_shape(self, input_shape):
        return self.norm.compute_output_shape(input_shape)

    def build(self, input_shape):
        # RMSNormalization's build checks that its scale broadcasts onto the input with numpy,
        # which takes no unknown sizes: the batch and sequence are free here (size 1 for it).
        self.norm.build(tuple(1 if d is None else d for d in input_shape))
        self.finish_build()

    def call(self, inputs, **kwargs):
        return self.norm.call(inputs)
