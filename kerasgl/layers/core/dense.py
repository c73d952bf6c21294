"""Core layers: Dense, Activation, and the reshaping layers that move no arithmetic
(Flatten, Reshape, Permute, RepeatVector)."""
from __future__ import annotations


import numpy as np

from ...errors import ModelFileError
from ...ops import matmul
from ...tensors import ownership
from .. import activation_functions, config_values
from ..base import AffineFoldable, Layer, register


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
        self.fused = activation_functions.pointwise(self.activation, keras_major, f"Layer '{self.name}'")
        # A softmax over few units runs in the matmul's epilogue (ops/matmul.py).
        self._softmax_in_matmul = (self.fused is None and self.units <= matmul.SOFTMAX_MAX_COLUMNS
                                   and activation_functions.activation_name(self.activation) == "softmax")
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
        """Adopt a pointwise activation (activation_functions.Pointwise) applied right after: only when this
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
        # with its bias (ops/matmul.py ColumnSplit; self.bias is then None). The kernel is stored
        # as load_model's storage_dtype asks (float16: halves); the bias stays float32.
        self.kernel, self.bias = matmul.upload_dense(kernel, bias, self.upload,
                                                     f"Layer '{self.name}' (Dense)",
                                                     dtype=self.storage_dtype)
        self.built = True

    def call(self, inputs, **kwargs):
        if inputs.shape[-1:] != tuple(self.kernel.shape[:1]):
            raise self.shape_error(f"expects the last input dimension to be {self.kernel.shape[0]}. "
                                   f"Received input shape {tuple(inputs.shape)}.")
        fn = self.fused
        if fn is None and self._softmax_in_matmul:
            return matmul.dense(inputs, self.kernel, self.bias, "softmax")
        if fn is not None:
            return matmul.dense(inputs, self.kernel, self.bias, fn.function, fn.params)
        return ownership.tidy.run(lambda: activation_functions.apply(
            matmul.dense(inputs, self.kernel, self.bias), self.activation, self.keras_major,
            self.name))
