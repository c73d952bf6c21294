"""The Masking layer, and the boolean operations Keras 3 records in functional models to compute
masks (`NotEqual(tokens, 0)` for Embedding(mask_zero=True), `Any(NotEqual(x, v))` for Masking,
`LogicalOr`, `ZerosLike`... for merges). The comparisons and logical ops are in op_nodes_typed.py;
their results are bool tensors (0 / 1 words), which a layer that is not an op node receives as
float32 0.0 / 1.0 (kerasgl's masks: ops/typed.py bools_as_float)."""
from __future__ import annotations

from ..ops import creation, elementwise, masking, typed
from ..tensors.tensor import retag, view
from .base import Layer, register
from .op_nodes import OpNode, ReduceOp, checked_operand, register_op


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
        keep = masking.any_not_equal(inputs, self.mask_value, keepdims=True)
        try:
            return elementwise.mul(inputs, keep)
        finally:
            keep.dispose()


@register_op("Any", "All")
class AnyAllOp(ReduceOp):
    """any / all -> bool: max / min of each value's truth (nonzero) as 0.0 / 1.0."""
    shaders = ("typed_unary.comp", "reduce.comp")
    output_dtype = "bool"

    def result_dtype(self, bound, dtypes):
        checked_operand(self, bound["x"], "x")
        return "bool"

    def run(self, bound):
        x = bound["x"]
        truth = typed.unary("float_truth_as_float" if x.dtype == "float32" else
                            "int_truth_as_float", x, "float32")
        try:
            return self.reduced("max" if self.class_name == "Any" else "min", truth, bound, "bool")
        finally:
            truth.dispose()


@register_op("ZerosLike", "OnesLike")
class FillLikeOp(OpNode):
    """zeros / ones of x's shape and dtype (or the dtype asked: float32, int32, bool)."""
    params = ("x", "dtype")
    shaders = ("fill.comp",)

    def result_dtype(self, bound, dtypes):
        dtype = self.opt(bound, "dtype")
        if dtype is None:
            return checked_operand(self, bound["x"], "x")
        if dtype not in ("float32", "int32", "bool"):
            raise self.unsupported(f"dtype={dtype!r}")
        return dtype

    def run(self, bound):
        x = bound["x"]
        dtype = self.result_dtype(bound, {x.dtype})
        value = 0 if self.class_name == "ZerosLike" else 1
        if dtype != "bool":
            return creation.fill(x.shape, value, dtype)
        words = creation.fill(x.shape, value, "int32")
        try:
            return retag(words, "bool")
        finally:
            words.dispose()


@register_op("ConvertToTensor")
class ConvertToTensorOp(OpNode):
    """keras.ops.convert_to_tensor of a tensor (Attention.compute_mask records it on the query's
    mask): the same values, as the dtype asked (float32, int32, bool; int64 and float64 are
    Keras's int32 and float32 under JAX). Other dtypes are refused at load."""
    params = ("x", "dtype", "sparse", "ragged")
    shaders = ("typed_unary.comp",)
    _AS = {"int64": "int32", "float64": "float32"}

    def result_dtype(self, bound, dtypes):
        dtype = self.opt(bound, "dtype")
        if dtype is None:
            return checked_operand(self, bound["x"], "x")
        dtype = self._AS.get(dtype, dtype)
        if dtype not in ("float32", "int32", "bool"):
            raise self.unsupported(f"convert_to_tensor to dtype {dtype!r}")
        checked_operand(self, bound["x"], "x")
        return dtype

    def run(self, bound):
        x = bound["x"]
        dtype = self.result_dtype(bound, {x.dtype})
        return view(x, x.shape) if dtype == x.dtype else typed.convert(x, dtype)
