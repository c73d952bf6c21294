"""The Masking layer, and the boolean operations Keras 3 records in functional models to compute
masks (`NotEqual(tokens, 0)` for Embedding(mask_zero=True), `Any(NotEqual(x, v))` for Masking,
`LogicalOr`, `ZerosLike`... for merges). The comparisons and logical ops are in numpy/logic.py;
their results are bool tensors (0 / 1 words), which a layer that is not an op node receives as
float32 0.0 / 1.0 (kerasgl's masks: ops/typed.py bools_as_float)."""
from __future__ import annotations

from ...ops import elementwise, masking
from ...tensors import ownership
from ..base import Layer, register


@register("Masking")
class Masking(Layer):
    """Outputs x with the steps whose features all equal mask_value set to 0; its output carries
    the mask of the kept steps (compute_mask) to the layers after it (compiler/masks.py)."""
    shaders = ("not_equal.comp", "reduce.comp", "binary.comp")
    mask_behaviour = "computes"
    mask_from = "values"
    ignores_mask_argument = True
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        value = self.option("mask_value", 0.0)
        if not isinstance(value, (int, float)):
            raise self.unsupported(f"mask_value={value!r} (a tensor)")
        self.mask_value = float(value)

    def compute_mask(self, inputs, masks=None):
        """(batch, time) float mask: 1 where any feature differs from mask_value."""
        return masking.any_not_equal(inputs, self.mask_value)

    def mask_shape(self, input_shape):
        return tuple(input_shape)[:-1]

    def call(self, inputs, **kwargs):
        return ownership.tidy.run(lambda: elementwise.mul(
            inputs, masking.any_not_equal(inputs, self.mask_value, keepdims=True)))
