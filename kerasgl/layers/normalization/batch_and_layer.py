"""BatchNormalization (inference: moving statistics folded into one scale and shift per channel at
load) and LayerNormalization."""
from __future__ import annotations

import math

import numpy as np

from ...errors import ModelFileError
from ...ops import normalization
from ...ops.axes import normalize_axes
from .. import config_values, keras_api
from ..base import Layer, register

# Keras 2 BatchNormalization(renorm=True) appends moving_stddev, renorm_mean and renorm_stddev
# to its weights. They only steer training (batch renormalisation); at inference tf-keras
# normalises with moving_mean / moving_variance exactly like plain BatchNormalization
# (checked by the batchnorm_variants fixture).
_RENORM_EXTRA_WEIGHTS = 3


def span_params(input_shape, keep_axes, *arrays):
    """Per-channel parameters over the axes `keep_axes` (sorted, non-negative) -> (first axis,
    span, flat arrays) for the per-channel ops: each array is broadcast over the axes between
    the first and last kept axis that it does not vary along."""
    if not keep_axes:
        keep_axes = (len(input_shape) - 1,)
        arrays = [np.broadcast_to(np.asarray(a, np.float32).reshape(-1)[:1], (input_shape[-1],))
                  for a in arrays]
        return keep_axes[0], 1, [np.ascontiguousarray(a) for a in arrays]
    first, last = keep_axes[0], keep_axes[-1]
    span_shape = tuple(input_shape[first:last + 1])
    param_shape = tuple(input_shape[d] if d in keep_axes else 1 for d in range(first, last + 1))
    flat = []
    for a in arrays:
        a = np.asarray(a, np.float32)
        if a.size == 1:
            a = np.full(param_shape, a.reshape(()), np.float32)
        flat.append(np.ascontiguousarray(np.broadcast_to(a.reshape(param_shape), span_shape)).reshape(-1))
    return first, last - first + 1, flat


@register("BatchNormalization")
class BatchNormalization(Layer):
    shaders = ("channel_affine.comp",)
    mask_behaviour = "pass_through"
    keras_call_takes_mask = True      # Keras 3's call(inputs, training, mask): used in training only
    ignores_mask_argument = True

    @classmethod
    def weight_count(cls, config):
        # gamma (scale), beta (center), moving mean and variance
        return int(bool(config.get("scale", True))) + int(bool(config.get("center", True))) + 2

    @classmethod
    def inference_weights(cls, config, weights):
        base = cls.weight_count(config)
        if config.get("renorm") and len(weights) == base + _RENORM_EXTRA_WEIGHTS:
            return weights[:base]
        return weights

    @classmethod
    def normalize_keras2_config(cls, config):
        # Keras 2 wrote the axis as a list ([3]); several axes stay a list (the weights then have
        # the broadcast shape, e.g. (1, H, 1, C)).
        if isinstance(config.get("axis"), list) and len(config["axis"]) == 1:
            config["axis"] = config["axis"][0]
        return config

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.axis = config_values.axes(self, "axis", -1)
        self.center = config_values.flag(self, "center", True)
        self.scale = config_values.flag(self, "scale", True)
        self.epsilon = config_values.number(self, "epsilon", 1e-3)    # NaN, < 0: Keras takes them
        if self.option("virtual_batch_size"):
            raise self.unsupported("virtual_batch_size")
        self.expect_weights(2 + self.center + self.scale)

    def compute_output_shape(self, input_shape):
        normalize_axes(self.axis, len(input_shape), f"Layer '{self.name}': axis")
        return input_shape

    def build(self, input_shape):
        axes = normalize_axes(self.axis, len(input_shape), f"Layer '{self.name}': axis")
        expected = tuple(input_shape[a] for a in axes)
        if None in expected:
            raise self.shape_error(f"axis {self.axis} of input shape {tuple(input_shape)} has no "
                                   f"fixed size: Keras needs one to hold the statistics.")
        # The shape every weight has in Keras's files: (C,) for one axis; for several (Keras 2),
        # the input's rank with 1 on the other axes.
        wanted = expected if len(axes) == 1 else \
            tuple(input_shape[d] if d in axes else 1 for d in range(len(input_shape)))
        # Every array the file holds for the layer: renorm's training-only ones too (unused here,
        # but a file whose arrays do not fit its config is damaged).
        for index, weight in enumerate(keras_api.stored_weights(self.spec)):
            if tuple(np.shape(weight)) != wanted:
                raise ModelFileError(f"Layer '{self.name}' ({self.class_name}): weight {index} has "
                                     f"shape {tuple(np.shape(weight))}, the config and input shape "
                                     f"{tuple(input_shape)} imply {wanted}.")
        inv, shift = self.affine()
        if inv.size != math.prod(expected):
            raise self.shape_error(f"statistics of shape {inv.shape} do not fit input shape "
                                   f"{tuple(input_shape)} along axis {self.axis}.")
        self.first, self.span, (scale, shift) = span_params(tuple(input_shape), axes, inv, shift)
        self.scale_t, self.shift_t = self.upload(scale), self.upload(shift)
        self.built = True

    def as_channel_affine(self):
        return (self.axis,) + self.affine()

    def affine(self) -> tuple[np.ndarray, np.ndarray]:
        """Inference BatchNormalization as y = x * scale + shift, per normalised position.
        As keras.ops.batch_normalization: scale = rsqrt(var + eps) * gamma,
        shift = beta - mean * scale (float32 throughout, in Keras's order of operations)."""
        weights = [np.asarray(w, np.float32) for w in self.weights_np]
        gamma = weights.pop(0) if self.scale else None
        beta = weights.pop(0) if self.center else None
        mean, variance = weights
        # A negative or NaN epsilon (or variance) gives NaN / inf, silently, as in Keras.
        with np.errstate(all="ignore"):
            inv = (np.float32(1.0) / np.sqrt(variance + np.float32(self.epsilon))).astype(np.float32)
            if gamma is not None:
                inv = inv * gamma
            shift = -mean * inv
            if beta is not None:
                shift = shift + beta
        return inv, shift

    def call(self, inputs, **kwargs):
        return normalization.scale_shift(inputs, self.scale_t, self.shift_t, self.first, self.span)


@register("LayerNormalization")
class LayerNormalization(Layer):
    shaders = ("layer_norm.comp",)
    mask_behaviour = "pass_through"

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.axis = config_values.axes(self, "axis", -1)
        self.center = config_values.flag(self, "center", True)
        self.scale = config_values.flag(self, "scale", True)
        self.rms_scaling = config_values.flag(self, "rms_scaling", False)
        # NaN or < 0: Keras computes with them. null: Keras 3's layer_normalization reads an
        # epsilon of None as backend.epsilon(), 1e-7.
        epsilon = config_values.optional_number(self, "epsilon") \
            if "epsilon" in (self.config or {}) else 1e-3
        self.epsilon = 1e-7 if epsilon is None else epsilon
        has_gamma = self.scale or self.rms_scaling
        has_beta = self.center and not self.rms_scaling
        self.expect_weights(has_gamma + has_beta)
        self.has_gamma, self.has_beta = has_gamma, has_beta

    def compute_output_shape(self, input_shape):
        normalize_axes(self.axis, len(input_shape), f"Layer '{self.name}': axis")
        return input_shape

    def build(self, input_shape):
        axes = normalize_axes(self.axis, len(input_shape), f"Layer '{self.name}': axis")
        if isinstance(self.axis, tuple) and len(axes) != len(self.axis):
            raise self.shape_error(f"axis {list(self.axis)} names one axis twice for input shape "
                                   f"{tuple(input_shape)}.")
        if any(input_shape[a] is None for a in axes):
            # Keras sizes gamma / beta by the normalised axes: they must be known (not the batch).
            raise self.shape_error(f"axis {self.axis} normalises a dimension of unknown size in "
                                   f"input shape {tuple(input_shape)}.")
        # Keras gives gamma / beta the sizes of the normalised axes in the config's order.
        wanted = tuple(input_shape[a] for a in (self.axis if isinstance(self.axis, tuple)
                                                else (self.axis,)))
        weights = list(self.weights_np)
        for w in weights:
            if tuple(w.shape) != wanted:
                raise ModelFileError(f"Layer '{self.name}' ({self.class_name}): a weight of shape "
                                     f"{tuple(w.shape)}; axis {self.axis} of input shape "
                                     f"{tuple(input_shape)} implies {wanted}.")
        # Keras reshapes gamma / beta (C order) onto the sorted axes: the flat order is the same.
        self.gamma = self.upload(weights.pop(0).astype(np.float32).reshape(-1)) if self.has_gamma else None
        self.beta = self.upload(weights.pop(0).astype(np.float32).reshape(-1)) if self.has_beta else None
        self.built = True

    def call(self, inputs, **kwargs):
        return normalization.layer_norm(inputs, self.gamma, self.beta, self.axis, self.epsilon,
                                        self.rms_scaling)
