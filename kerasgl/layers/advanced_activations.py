"""Activation layers with options: ReLU, LeakyReLU, PReLU, ELU, Softmax, ThresholdedReLU."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..ops import elementwise, masking, normalization, softmax
from .base import Layer, register


class _Pointwise(Layer):
    """A layer that is one function of activations.glsl with fixed parameters."""
    shaders = ("unary.comp",)
    function = "linear"
    params: tuple = ()

    def call(self, inputs, **kwargs):
        return elementwise.unary(self.function, inputs, *self.params)


@register("ReLU")
class ReLU(_Pointwise):
    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        max_value = self.option("max_value")
        slope = float(self.option("negative_slope", 0.0) or 0.0)
        threshold = float(self.option("threshold", 0.0) or 0.0)
        if max_value is not None and float(max_value) < 0:
            raise self.shape_error(f"max_value must be >= 0. Received {max_value}.")
        if max_value is None and slope == 0.0 and threshold == 0.0:
            self.function = "relu"
        else:
            self.function = "relu_full"
            self.params = (-1.0 if max_value is None else float(max_value), slope, threshold)


@register("LeakyReLU")
class LeakyReLU(_Pointwise):
    function = "leaky_relu"

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        # Keras 3 calls it negative_slope, Keras 2 alpha; both default to 0.3 in the layer.
        slope = self.option("negative_slope", self.option("alpha", 0.3))
        self.params = (float(0.3 if slope is None else slope),)


class _OneParameter(_Pointwise):
    """A pointwise function of one parameter, the layer option `parameter` (default 1.0)."""
    parameter = ""

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.params = (float(self.option(self.parameter, 1.0)),)


@register("ELU")
class ELU(_OneParameter):
    function, parameter = "elu", "alpha"


@register("ThresholdedReLU")
class ThresholdedReLU(_OneParameter):
    """Keras 2 only: x if x > theta else 0."""
    function, parameter = "thresholded_relu", "theta"


@register("Softmax")
class Softmax(Layer):
    shaders = ("softmax.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        axis = self.option("axis", -1)
        self.axis = tuple(int(a) for a in axis) if isinstance(axis, (list, tuple)) else int(axis)

    def compute_output_shape(self, input_shape):
        rank = len(input_shape)
        for a in (self.axis if isinstance(self.axis, tuple) else (self.axis,)):
            if not -rank <= a < rank:
                raise self.shape_error(f"axis {a} is out of range for input shape {tuple(input_shape)}.")
        return input_shape

    def call(self, inputs, mask=None, **kwargs):
        """With a mask (Keras 3 passes one on, masks.py): masked logits -1e9, then masked
        outputs 0, as Keras 3's Softmax.call."""
        if mask is None:
            return softmax.softmax(inputs, self.axis)
        try:
            return masking.masked_softmax(inputs, mask, self.axis)
        except ShapeError as exc:
            raise self.shape_error(str(exc)) from None


@register("PReLU")
class PReLU(Layer):
    """max(x, 0) - alpha * max(-x, 0); alpha has the input's shape without the batch axis, with 1
    along shared_axes (broadcast once, at build, to the full shape)."""
    shaders = ("channel_affine.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.expect_weights(1)

    def compute_output_shape(self, input_shape):
        alpha = self.weights_np[0]
        if len(input_shape) != alpha.ndim + 1:
            raise self.shape_error(f"expects inputs of rank {alpha.ndim + 1} (its alpha has shape "
                                   f"{alpha.shape}). Received input shape {tuple(input_shape)}.")
        return input_shape

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        alpha = self.weights_np[0].astype(np.float32)
        try:
            full = np.broadcast_to(alpha, tuple(input_shape[1:]))
        except ValueError:
            raise self.shape_error(f"alpha of shape {alpha.shape} does not fit input shape "
                                   f"{tuple(input_shape)}.") from None
        self.alpha = self.upload(full.reshape(-1))
        self.built = True

    def call(self, inputs, **kwargs):
        if inputs.ndim == 1:
            return normalization.prelu(inputs, self.alpha, axis=0, span=1)
        return normalization.prelu(inputs, self.alpha, axis=1, span=inputs.ndim - 1)
