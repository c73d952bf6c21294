"""Layers that only act during training: identity at inference (predict never trains).
Each returns a view of its input (no copy, no dispatch)."""
from __future__ import annotations

from ...tensors.tensor import view
from ..base import Layer, register


@register("Dropout", "GaussianNoise", "GaussianDropout", "AlphaDropout", "ActivityRegularization")
class InferenceIdentity(Layer):
    mask_behaviour = "pass_through"
    returns_its_input = True      # Keras 3's inference call returns its input object
    weight_arrays = 0

    def call(self, inputs, **kwargs):
        return view(inputs, inputs.shape)


@register("SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D")
class SpatialDropout(InferenceIdentity):
    @classmethod
    def normalize_keras2_config(cls, config):
        config.pop("noise_shape", None)      # Keras 2 wrote None there; inference is identity
        return config
