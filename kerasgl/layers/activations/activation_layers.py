"""Activation layers with options: ReLU, LeakyReLU, PReLU, ELU, Softmax, ThresholdedReLU."""
from __future__ import annotations

import numpy as np

from ...errors import ShapeError, UnsupportedLayerError
from ...ops import elementwise, masking, normalization, softmax
from ..activation_functions import Pointwise
from .. import config_values
from ..base import Layer, register


class _Pointwise(Layer):
    """A layer that is one function of activations.glsl with fixed parameters. A subclass whose
    call computes anything else must say so in as_pointwise (None), or fusion runs the function
    alone in its producer's epilogue."""
    shaders = ("unary.comp",)
    mask_behaviour = "pass_through"
    weight_arrays = 0
    function = "linear"
    params: tuple = ()

    def as_pointwise(self, args, kwargs):
        return Pointwise(f"act_{self.function}", tuple(self.params))

    def call(self, inputs, **kwargs):
        return elementwise.unary(self.function, inputs, *self.params)


@register("ReLU")
class ReLU(_Pointwise):
    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        # Keras refuses negative values (and, in Keras 3, a null slope or threshold); NaN and inf
        # it takes and computes with (shaders/activations.glsl act_relu_full follows it).
        max_value = config_values.optional_number(self, "max_value", minimum=0.0)
        if keras_major == 2:
            slope = config_values.optional_number(self, "negative_slope", minimum=0.0) or 0.0
            threshold = config_values.optional_number(self, "threshold", minimum=0.0) or 0.0
        else:
            slope = config_values.number(self, "negative_slope", 0.0, minimum=0.0)
            threshold = config_values.number(self, "threshold", 0.0, minimum=0.0)
        if max_value is None and slope == 0.0 and threshold == 0.0:
            self.function = "relu"
        else:
            self.function = "relu_full"
            self.params = (-1.0 if max_value is None else float(max_value), slope, threshold)


@register("LeakyReLU")
class LeakyReLU(_Pointwise):
    function = "leaky_relu"

    @classmethod
    def normalize_keras2_config(cls, config):
        if "negative_slope" not in config and "alpha" in config:
            config["negative_slope"] = config.pop("alpha")      # Keras 2's name
        return config

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        # Keras 3 calls it negative_slope, Keras 2 alpha (normalize_keras2_config renames it);
        # both default to 0.3. Keras 3 refuses a null or negative slope.
        if keras_major == 2:
            slope = config_values.optional_number(self, "negative_slope")
            slope = 0.3 if slope is None else slope
        else:
            slope = config_values.number(self, "negative_slope", 0.3, minimum=0.0)
        self.params = (slope,)


class _OneParameter(_Pointwise):
    """A pointwise function of one parameter, the layer option `parameter` (default 1.0)."""
    parameter = ""

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.params = (config_values.number(self, self.parameter, 1.0),)


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
    mask_behaviour = "consumes"       # Keras 3: masked logits -1e9, then masked outputs 0
    keras2_mask_refused = True        # tf.keras's Softmax adds the mask instead
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.axis = config_values.axes(self, "axis", -1)

    def compute_output_shape(self, input_shape):
        rank = len(input_shape)
        for a in (self.axis if isinstance(self.axis, tuple) else (self.axis,)):
            if not -rank <= a < rank:
                raise self.shape_error(f"axis {a} is out of range for input shape {tuple(input_shape)}.")
        return input_shape

    def check_mask_shape(self, mask_shape, input_shape) -> None:
        """Keras's Softmax.call check, at load: the mask must broadcast to the inputs (dims that
        are None are not compared). Keras raises too, when the model runs."""
        if mask_shape is None or input_shape is None:
            return
        fits = len(mask_shape) <= len(input_shape) and all(
            m is None or i is None or m in (1, i)
            for m, i in zip(reversed(mask_shape), reversed(input_shape)))
        if not fits:
            raise UnsupportedLayerError(
                f"Layer '{self.name}' (Softmax): is called with a mask of shape "
                f"{_format(mask_shape)} that does not broadcast to its input shape "
                f"{_format(input_shape)}; Keras 3 raises when it runs this model too.")

    def call(self, inputs, mask=None, **kwargs):
        """With a mask (Keras 3 passes one on, compiler/masks.py): masked logits -1e9, then masked
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
    mask_behaviour = "pass_through"
    weight_arrays = 1

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


def _format(shape) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"
