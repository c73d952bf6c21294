"""GroupNormalization, RMSNormalization, UnitNormalization and SpectralNormalization (inference),
composed from the existing normalisation, reduction and elementwise ops."""
from __future__ import annotations

import numpy as np

from ...ops import elementwise, merge, normalization, reduce
from ...ops.axes import normalize_axes
from ...tensors import ownership
from ...tensors.tensor import view
from ..base import Layer, register
from .batch_and_layer import span_params
from ..rnn.wrappers import inner_layer, inner_weight_count


def _axes_option(value):
    return tuple(int(a) for a in value) if isinstance(value, (list, tuple)) else int(value)


@register("GroupNormalization")
class GroupNormalization(Layer):
    """The channels along `axis` split into `groups`; each (sample, group) is standardised over
    its channels and every other non-batch axis (layer_norm over the grouped view), then
    gamma / beta per channel (channel_affine)."""
    shaders = ("layer_norm.comp", "channel_affine.comp")
    mask_behaviour = "pass_through"     # Keras: supports_masking, call ignores the mask

    @classmethod
    def weight_count(cls, config):
        return int(bool(config.get("scale", True))) + int(bool(config.get("center", True)))

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.groups = int(self.option("groups", 32))
        self.axis = int(self.option("axis", -1))
        self.epsilon = float(self.option("epsilon", 1e-3))
        self.center = bool(self.option("center", True))
        self.scale = bool(self.option("scale", True))
        self.expect_weights(self.center + self.scale)

    def _grouping(self, input_shape):
        rank = len(input_shape)
        axis = normalize_axes(self.axis, rank, f"Layer '{self.name}': axis")[0]
        if axis == 0:
            raise self.shape_error("cannot normalise over the batch axis.")
        channels = input_shape[axis]
        groups = channels if self.groups == -1 else self.groups
        if channels is None or groups > channels or channels % groups:
            raise self.shape_error(f"{channels} channels along axis {self.axis} cannot be split "
                                   f"into {groups} groups.")
        return axis, groups, channels

    def compute_output_shape(self, input_shape):
        self._grouping(input_shape)
        return input_shape

    def build(self, input_shape):
        axis, groups, channels = self._grouping(input_shape)
        weights = [np.asarray(w, np.float32).reshape(-1) for w in self.weights_np]
        for w in weights:
            if w.size != channels:
                raise self.shape_error(f"a weight of {w.size} values does not fit {channels} "
                                       "channels.")
        gamma = weights.pop(0) if self.scale else np.ones(channels, np.float32)
        beta = weights.pop(0) if self.center else np.zeros(channels, np.float32)
        self.first, self.span, (gamma, beta) = span_params(tuple(input_shape), (axis,), gamma, beta)
        # Without gamma, ones take its place (x * 1 + beta keeps one dispatch); neither: no pass.
        self.affine = self.scale or self.center
        self.gamma_t = self.upload(gamma, name="gamma") if self.affine else None
        self.beta_t = self.upload(beta, name="beta") if self.center else None
        self.built = True

    def call(self, inputs, **kwargs):
        axis, groups, channels = self._grouping(inputs.shape)
        shape = tuple(inputs.shape)
        grouped_shape = shape[:axis] + (groups, channels // groups) + shape[axis + 1:]
        reduced = tuple(d for d in range(1, len(grouped_shape)) if d != axis)

        def compute():
            normed = normalization.layer_norm(view(inputs, grouped_shape), None, None, reduced,
                                              self.epsilon)
            flat = view(normed, shape)
            if not self.affine:
                return flat
            return normalization.scale_shift(flat, self.gamma_t, self.beta_t, self.first, self.span)
        return ownership.tidy.run(compute)


@register("RMSNormalization")
class RMSNormalization(Layer):
    """x * rsqrt(mean(x^2 over axis) + epsilon) * scale, as keras.ops.rms_normalization (no mean
    is subtracted, unlike LayerNormalization(rms_scaling=True))."""
    shaders = ("binary.comp", "reduce.comp", "unary.comp")
    mask_behaviour = "drops"            # Keras's RMSNormalization does not support masking
    weight_arrays = 1                   # scale

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.axis = _axes_option(self.option("axis", -1))
        self.epsilon = float(self.option("epsilon", 1e-6))
        self.expect_weights(1)

    def compute_output_shape(self, input_shape):
        normalize_axes(self.axis, len(input_shape), f"Layer '{self.name}': axis")
        return input_shape

    def build(self, input_shape):
        self.axes = normalize_axes(self.axis, len(input_shape), f"Layer '{self.name}': axis")
        scale = np.asarray(self.weights_np[0], np.float32)
        # Keras multiplies by scale as stored (shape: the sizes of the sorted axes), broadcast as
        # numpy does onto the trailing dimensions.
        try:
            np.broadcast_shapes(tuple(input_shape[1:]), scale.shape)
        except ValueError:
            raise self.shape_error(f"scale of shape {scale.shape} does not broadcast onto input "
                                   f"shape {tuple(input_shape)}.") from None
        self.scale_t = self.upload(scale, name="scale")
        self.built = True

    def call(self, inputs, **kwargs):
        def compute():
            mean = reduce.reduce_mean(elementwise.mul(inputs, inputs), axis=self.axes,
                                      keepdims=True)
            root = elementwise.unary("sqrt", elementwise.add(mean, self.epsilon))
            return elementwise.mul(elementwise.div(inputs, root), self.scale_t)
        return ownership.tidy.run(compute)


@register("UnitNormalization")
class UnitNormalization(Layer):
    """x * min(rsqrt(sum(x^2 over axis)), 1e12), as keras.ops.normalize(order=2, epsilon=1e-12)."""
    shaders = ("l2_normalize.comp",)
    mask_behaviour = "pass_through"     # Keras: supports_masking, call ignores the mask
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.axis = _axes_option(self.option("axis", -1))

    def compute_output_shape(self, input_shape):
        normalize_axes(self.axis, len(input_shape), f"Layer '{self.name}': axis")
        return input_shape

    def call(self, inputs, **kwargs):
        return merge.l2_normalize(inputs, self.axis, 1e-12)


@register("SpectralNormalization")
class SpectralNormalization(Layer):
    """Inference runs the wrapped layer with its stored kernel: Keras's call only renormalises
    (power iteration on vector_u) when training, and the stored kernel is the normalised one."""
    mask_behaviour = "drops"            # a Keras Wrapper does not support masking

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if int(self.option("power_iterations", 1)) < 1:
            raise self.unsupported(f"power_iterations={self.option('power_iterations')}")
        count = inner_weight_count(self.config)
        weights = self.weights_np
        # A .keras file holds the wrapper's own variables first (its alias of the wrapped kernel,
        # then vector_u), then the wrapped layer's; an .h5 file the wrapped layer's, then vector_u.
        if count is not None and len(weights) == count + 2:
            inner = weights[2:]
        elif count is not None and len(weights) == count + 1:
            inner = weights[:count]
        else:
            raise self.unsupported(f"a SpectralNormalization with {len(weights)} weight arrays "
                                   f"around a layer of {count} (kerasgl cannot tell them apart)")
        inner_class = (self.option("layer") or {}).get("class_name")
        if inner_class in ("Embedding", "ReversibleEmbedding"):
            # Keras casts the wrapped layer's output to the input's dtype: integer ids truncate
            # every embedding value towards zero, which kerasgl has no op for.
            raise self.unsupported(f"wrapping an {inner_class} (Keras casts its output to the "
                                   "integer dtype of the ids)")
        self.layer = inner_layer(self, self.option("layer"), inner, "layer")
        self.shaders = self.layer.shaders

    def compute_output_shape(self, input_shape):
        return self.layer.compute_output_shape(input_shape)

    def build(self, input_shape):
        self.layer.build(input_shape)
        self.built = True

    def call(self, inputs, **kwargs):
        return self.layer.call(inputs)

    def dispose(self) -> None:
        self.layer.dispose()
        super().dispose()
