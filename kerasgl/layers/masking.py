"""The Masking layer, and the boolean operations Keras 3 records in functional models to compute
masks (`NotEqual(tokens, 0)` for Embedding(mask_zero=True), `Any(NotEqual(x, v))` for Masking,
`LogicalOr`, `ZerosLike`... for merges). Booleans are float32 0.0 / 1.0 tensors in kerasgl; an
op's boolean output used as a model output reads as 0/1 floats."""
from __future__ import annotations

from ..ops import creation, elementwise, masking, reduce
from ..tensors.tensor import view
from .base import Layer, register
from .op_nodes import BroadcastingOp, OpNode, ReduceOp, register_op


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


@register_op("NotEqual")
class NotEqualOp(BroadcastingOp):
    shaders = ("not_equal.comp",)

    def run(self, bound):
        x, y = bound["x1"], bound["x2"]
        if isinstance(y, (int, float)):
            return masking.not_equal(x, y)
        if isinstance(x, (int, float)):
            return masking.not_equal(y, x)
        if x.dtype != "float32" or y.dtype != "float32":
            raise self.unsupported("comparing two int32 tensors")
        difference = elementwise.binary("sub", x, y)
        try:
            return masking.not_equal(difference, 0.0)
        finally:
            difference.dispose()


_LOGICAL = {"LogicalOr": "maximum", "LogicalAnd": "minimum"}


@register_op(*_LOGICAL)
class LogicalOp(BroadcastingOp):
    shaders = ("binary.comp",)

    def run(self, bound):
        return elementwise.binary(_LOGICAL[self.class_name], bound["x1"], bound["x2"])


@register_op("LogicalNot")
class LogicalNotOp(OpNode):
    shaders = ("binary.comp",)

    def run(self, bound):
        return elementwise.binary("sub", 1.0, bound["x"])


@register_op("Any", "All")
class AnyAllOp(ReduceOp):
    """any / all of 0/1 values: max / min."""

    def run(self, bound):
        axis = self.opt(bound, "axis")
        axis = tuple(axis) if isinstance(axis, list) else axis
        return reduce.reduce("max" if self.class_name == "Any" else "min", bound["x"], axis,
                             bool(self.opt(bound, "keepdims", False)))


@register_op("ZerosLike", "OnesLike")
class FillLikeOp(OpNode):
    shaders = ("fill.comp",)

    def run(self, bound):
        return creation.fill(bound["x"].shape, 0.0 if self.class_name == "ZerosLike" else 1.0)



@register_op("ConvertToTensor")
class ConvertToTensorOp(OpNode):
    """keras.ops.convert_to_tensor of a tensor (Attention.compute_mask records it on the query's
    mask): the same values. A dtype other than float32 / bool is not supported."""
    params = ("x", "dtype", "sparse", "ragged")
    shaders = ()

    def run(self, bound):
        dtype = self.opt(bound, "dtype")
        if dtype not in (None, "float32", "bool"):
            raise self.unsupported(f"convert_to_tensor to dtype {dtype!r}")
        x = bound["x"]
        return view(x, x.shape)
