"""Layer classes that keras.applications defines for its own models and saves in their files:
ConvNeXt's LayerScale and InceptionResNetV2's CustomScaleLayer."""
from __future__ import annotations

import numpy as np

from ...ops import elementwise, normalization
from ...tensors import ownership
from ..base import Layer, register


@register("LayerScale")
class LayerScale(Layer):
    """keras.applications.convnext.LayerScale: x * gamma, one gamma per channel (the last axis,
    projection_dim of them). An inference per-channel affine map: folded into the Dense before
    it (ConvNeXt's second pointwise projection) by compiler/fusion.py, else its own dispatch."""
    shaders = ("channel_affine.comp",)
    mask_behaviour = "drops"    # Keras's: the class does not support masking
    weight_arrays = 1           # gamma

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.expect_weights(1)
        self.gamma = np.asarray(self.weights_np[0], np.float32).reshape(-1)
        dim = self.option("projection_dim")
        if dim is not None and self.gamma.size != int(dim):
            raise self.shape_error(f"gamma of {self.gamma.size} values does not match "
                                   f"projection_dim={dim}.")

    def compute_output_shape(self, input_shape):
        if not input_shape or input_shape[-1] not in (None, self.gamma.size):
            raise self.shape_error(f"expects {self.gamma.size} channels on the last axis. "
                                   f"Received input shape {tuple(input_shape)}.")
        return input_shape

    def as_channel_affine(self):
        return (-1, self.gamma, np.zeros_like(self.gamma))

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        self.gamma_t = self.upload(self.gamma, name="gamma")
        self.built = True

    def call(self, inputs, **kwargs):
        return normalization.scale_shift(inputs, self.gamma_t, None, inputs.ndim - 1)


@register("CustomScaleLayer")
class CustomScaleLayer(Layer):
    """keras.applications.inception_resnet_v2.CustomScaleLayer, called on [x, r]: x + r * scale
    (an Inception-ResNet block's shortcut plus its scaled residual branch), with the activation
    after it, when fusion adopts one, in the same dispatch as the sum."""
    shaders = ("binary.comp",)
    mask_behaviour = "drops"    # Keras's: the class does not support masking
    weight_arrays = 0
    epilogue = None          # a pointwise activation adopted by compiler/fusion.py

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.scale = float(self.option("scale"))

    def compute_output_shape(self, input_shape):
        shapes = [tuple(s) for s in input_shape] if isinstance(input_shape, list) else []
        if len(shapes) != 2 or len(shapes[0]) != len(shapes[1]) or any(
                a is not None and b is not None and a != b for a, b in zip(*shapes)):
            raise self.shape_error(f"expects a list of two inputs of one shape. Received "
                                   f"{input_shape}.")
        return shapes[0]

    def fuse_activation(self, pointwise) -> bool:
        if pointwise is None or self.epilogue is not None:
            return False
        self.epilogue = pointwise
        return True

    def call(self, inputs, **kwargs):
        x, residual = inputs
        self.compute_output_shape([x.shape, residual.shape])
        # Keras's order of operations: the product, rounded, then the sum.
        return ownership.tidy.run(lambda: elementwise.binary(
            "add", x, elementwise.mul(residual, self.scale), self.epilogue))
