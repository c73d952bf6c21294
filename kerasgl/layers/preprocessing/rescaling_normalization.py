"""Preprocessing layers that run at inference: Rescaling and Normalization."""
from __future__ import annotations

import numpy as np

from ...errors import ModelFileError
from ...ops import normalization
from ...ops.axes import normalize_axes
from ..base import Layer, register
from ..normalization.batch_and_layer import span_params

KERAS_EPSILON = 1e-7   # keras.backend.epsilon()


def _config_array(value):
    """A config number or (nested) list; Keras 3 may serialise arrays as {"class_name": ...}."""
    if isinstance(value, dict):
        value = value.get("config", {}).get("value", value.get("value"))
    return np.asarray(value, np.float32)


@register("Rescaling")
class Rescaling(Layer):
    """x * scale + offset; scale / offset may be lists, broadcast over the trailing axes."""
    shaders = ("channel_affine.comp",)
    mask_behaviour = "pass_through"

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.scale = _config_array(self.option("scale", 1.0))
        self.offset = _config_array(self.option("offset", 0.0))

    def build(self, input_shape):
        k = max(self.scale.ndim, self.offset.ndim, 1)
        rank = len(input_shape)
        if k >= rank:
            raise self.shape_error(f"scale {self.scale.shape} / offset {self.offset.shape} do not fit "
                                   f"input shape {tuple(input_shape)}.")
        trailing = tuple(input_shape[rank - k:])
        try:
            scale = np.broadcast_to(self.scale, trailing).reshape(-1)
            offset = np.broadcast_to(self.offset, trailing).reshape(-1)
        except ValueError:
            raise self.shape_error(f"scale {self.scale.shape} / offset {self.offset.shape} do not "
                                   f"broadcast against input shape {tuple(input_shape)}.") from None
        self.first, self.span = rank - k, k
        self.scale_t = self.upload(np.ascontiguousarray(scale))
        self.offset_t = self.upload(np.ascontiguousarray(offset))
        self.built = True

    def call(self, inputs, **kwargs):
        return normalization.scale_shift(inputs, self.scale_t, self.offset_t, self.first, self.span)


@register("Normalization")
class Normalization(Layer):
    """(x - mean) / max(sqrt(variance), epsilon), or mean + x * max(sqrt(variance), epsilon) with
    invert=True. mean / variance come from the weights (adapted layer) or the config."""
    shaders = ("channel_affine.comp",)
    mask_behaviour = "pass_through"

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        axis = self.option("axis", -1)
        self.axis = () if axis is None else (tuple(axis) if isinstance(axis, (list, tuple)) else (int(axis),))
        self.invert = bool(self.option("invert", False))
        if self.option("mean") is not None:
            self.mean = _config_array(self.option("mean"))
            self.variance = _config_array(self.option("variance"))
        elif len(self.weights_np) >= 2:
            self.mean, self.variance = (w.astype(np.float32) for w in self.weights_np[:2])
        else:
            raise ModelFileError(f"Layer '{self.name}' (Normalization) has neither mean/variance in "
                                 "its config nor adapted weights.")

    def build(self, input_shape):
        keep = normalize_axes(self.axis, len(input_shape), f"Layer '{self.name}': axis") if self.axis else ()
        keep_size = int(np.prod([input_shape[a] for a in keep])) if keep else 1
        if self.mean.size not in (1, keep_size):
            raise self.shape_error(f"mean of shape {self.mean.shape} does not fit input shape "
                                   f"{tuple(input_shape)} along axis {self.axis}.")
        std = np.maximum(np.sqrt(self.variance), np.float32(KERAS_EPSILON)).astype(np.float32)
        self.first, self.span, (mean, std) = span_params(tuple(input_shape), keep, self.mean, std)
        self.mean_t, self.std_t = self.upload(mean), self.upload(std)
        self.built = True

    def call(self, inputs, **kwargs):
        return normalization.standardize(inputs, self.mean_t, self.std_t, self.first, self.span,
                                         self.invert)
