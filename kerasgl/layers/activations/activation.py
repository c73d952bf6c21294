"""TODO docstring"""
from __future__ import annotations

from .. import activation_functions
from ..base import Layer, register


@register("Activation")
class Activation(Layer):
    shaders = ("unary.comp",)
    mask_behaviour = "pass_through"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.activation = self.option("activation")
        # Raise at load time for an unknown activation.
        activation_functions.pointwise(self.activation, keras_major, f"Layer '{self.name}'")

    @property
    def returns_its_input(self) -> bool:
        return self.config.get("activation") == "linear"    # keras.activations.linear returns x

    def as_pointwise(self, args, kwargs):
        return activation_functions.pointwise(self.activation, self.keras_major, self.name)

    def call(self, inputs, **kwargs):
        return activation_functions.apply(inputs, self.activation, self.keras_major, self.name)
