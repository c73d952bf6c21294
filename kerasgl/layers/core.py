"""Core layers: Dense, Activation, and the reshaping layers that move no arithmetic
(Flatten, Reshape, Permute, RepeatVector)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ModelFileError
from ..ops import layout, matmul, merge
from ..tensors.tensor import view
from . import activations, config_values
from .base import AffineFoldable, Layer, register


def _rank_error(layer, expected: str, input_shape):
    return layer.shape_error(f"expects {expected}. Received input shape {tuple(input_shape)}.")


@register("Dense")
class Dense(AffineFoldable, Layer):
    """x @ kernel + bias with the activation fused into the matmul (softmax runs after it).
    On inputs of rank > 2 the kernel applies to the last axis (a 2-D matmul over a view)."""
    shaders = ("matmul.comp",)
    mask_behaviour = "pass_through"

    @classmethod
    def weight_count(cls, config):
        return 1 + bool(config.get("use_bias", True))        # kernel (+ bias)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.units = config_values.positive_int(self, "units")
        self.use_bias = config_values.flag(self, "use_bias", True)
        if self.option("lora_rank"):
            raise self.unsupported("a LoRA-enabled Dense (lora_rank)")
        if self.option("quantization_config") or "int8" in str(self.option("dtype", "")) \
                or "float8" in str(self.option("dtype", "")):
            raise self.unsupported("a quantized Dense")
        self.expect_weights(2 if self.use_bias else 1)
        self.activation = config_values.activation(self)
        self.fused = activations.pointwise(self.activation, keras_major, f"Layer '{self.name}'")
        # A softmax over few units runs in the matmul's epilogue (ops/matmul.py).
        self._softmax_in_matmul = (self.fused is None and self.units <= matmul.SOFTMAX_MAX_COLUMNS
                                   and activations.activation_name(self.activation) == "softmax")
        if self.fused is None and not self._softmax_in_matmul:
            self.shaders = ("matmul.comp", "softmax.comp")
        kernel = self.weights_np[0]
        if kernel.shape[1:] != (self.units,):
            raise ModelFileError(f"Layer '{self.name}' (Dense): kernel of shape {kernel.shape} does "
                                 f"not match units={self.units}.")

    def compute_output_shape(self, input_shape):
        if len(input_shape) < 1 or input_shape[-1] != self.weights_np[0].shape[0]:
            raise self.shape_error(f"expects the last input dimension to be "
                                   f"{self.weights_np[0].shape[0]}. Received input shape "
                                   f"{tuple(input_shape)}.")
        return tuple(input_shape[:-1]) + (self.units,)

    # -- graph fusions (kerasgl/compiler/fusion.py calls these before build; each returns False and
    # changes nothing where the result would not be exact) ---------------------------------------
    def _linear_and_unbuilt(self) -> bool:
        return not self.built and self.fused is not None and self.fused.is_identity

    @property
    def fold_width(self) -> int:
        return self.units

    def fuse_activation(self, pointwise) -> bool:
        """Adopt a pointwise activation (activations.Pointwise) applied right after: only when this
        layer's own activation is linear, since two activations do not compose in one epilogue."""
        if pointwise is None or self.fused is None or not self.fused.is_identity:
            return False
        self.fused = pointwise
        return True

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        kernel = self.weights_np[0].astype(np.float32)
        bias = self.weights_np[1].astype(np.float32) if self.use_bias else None
        if self._fold is not None:
            scale, shift = self._fold
            kernel = kernel * scale
            bias = shift if bias is None else bias * scale + shift
        # A kernel larger than one storage block (VGG16's fc1) is held as column pieces, each
        # with its bias (ops/matmul.py ColumnSplit; self.bias is then None).
        self.kernel, self.bias = matmul.upload_dense(kernel, bias, self.upload,
                                                     f"Layer '{self.name}' (Dense)")
        self.built = True

    def call(self, inputs, **kwargs):
        if inputs.shape[-1:] != tuple(self.kernel.shape[:1]):
            raise self.shape_error(f"expects the last input dimension to be {self.kernel.shape[0]}. "
                                   f"Received input shape {tuple(inputs.shape)}.")
        fn = self.fused
        if fn is None and self._softmax_in_matmul:
            return matmul.dense(inputs, self.kernel, self.bias, "softmax")
        out = matmul.dense(inputs, self.kernel, self.bias,
                           fn.function if fn else None, fn.params if fn else ())
        if fn is not None:
            return out
        try:
            return activations.apply(out, self.activation, self.keras_major, self.name)
        finally:
            out.dispose()


@register("Activation")
class Activation(Layer):
    shaders = ("unary.comp",)
    mask_behaviour = "pass_through"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.activation = self.option("activation")
        # Raise at load time for an unknown activation.
        activations.pointwise(self.activation, keras_major, f"Layer '{self.name}'")

    @property
    def returns_its_input(self) -> bool:
        return self.config.get("activation") == "linear"    # keras.activations.linear returns x

    def as_pointwise(self, args, kwargs):
        return activations.pointwise(self.activation, self.keras_major, self.name)

    def call(self, inputs, **kwargs):
        return activations.apply(inputs, self.activation, self.keras_major, self.name)


@register("Flatten")
class Flatten(Layer):
    """(batch, ...) -> (batch, prod(...)); channels_first inputs are moved to channels-last first,
    as Keras does, so the flattened order matches."""

    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.channels_first = self.option("data_format", "channels_last") == "channels_first"

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        size = None if any(d is None for d in rest) else math.prod(rest)
        return (input_shape[0], size)

    def call(self, inputs, **kwargs):
        shape = (inputs.shape[0], math.prod(inputs.shape[1:]))
        if self.channels_first and inputs.ndim > 2:
            moved = layout.transpose(inputs, (0, *range(2, inputs.ndim), 1))
            try:
                return view(moved, shape)
            finally:
                moved.dispose()
        return view(inputs, shape)


@register("Reshape")
class Reshape(Layer):
    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.target_shape = tuple(int(d) for d in self.option("target_shape"))
        if sum(1 for d in self.target_shape if d == -1) > 1:
            raise self.shape_error(f"target_shape {self.target_shape} has more than one -1.")

    def _resolve(self, input_shape):
        rest = input_shape[1:]
        if any(d is None for d in rest):
            return self.target_shape if -1 not in self.target_shape else \
                tuple(None if d == -1 else d for d in self.target_shape)
        try:
            return layout.resolve_shape(self.target_shape, math.prod(rest), rest)
        except Exception as exc:
            raise self.shape_error(f"cannot reshape input shape {tuple(input_shape)} to target "
                                   f"shape {self.target_shape}: {exc}") from None

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + tuple(self._resolve(input_shape))

    def call(self, inputs, **kwargs):
        return view(inputs, (inputs.shape[0],) + tuple(self._resolve(inputs.shape)))


@register("Permute")
class Permute(Layer):
    shaders = ("transpose.comp",)

    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.dims = tuple(int(d) for d in self.option("dims"))
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise self.shape_error(f"dims {self.dims} must be a permutation of 1..{len(self.dims)}.")

    def compute_output_shape(self, input_shape):
        if len(input_shape) != len(self.dims) + 1:
            raise _rank_error(self, f"inputs of rank {len(self.dims) + 1}", input_shape)
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def call(self, inputs, **kwargs):
        self.compute_output_shape(inputs.shape)
        return layout.transpose(inputs, (0,) + self.dims)


@register("RepeatVector")
class RepeatVector(Layer):
    shaders = ("concat.comp",)

    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.n = int(self.option("n"))

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 2:
            raise _rank_error(self, "inputs of rank 2 (batch, features)", input_shape)
        return (input_shape[0], self.n, input_shape[1])

    def call(self, inputs, **kwargs):
        self.compute_output_shape(inputs.shape)
        row = view(inputs, (inputs.shape[0], 1, inputs.shape[1]))
        try:
            return merge.concatenate([row] * self.n, axis=1)
        finally:
            row.dispose()
