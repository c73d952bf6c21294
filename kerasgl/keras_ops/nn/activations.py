"""keras.ops.nn (keras/src/ops/nn.py) activations beyond the elementwise ones numpy/arithmetic.py's
UnaryOp runs (relu, gelu, silu... share its fusable kernel): softmax / log_softmax over any axis,
log_sigmoid, hard_tanh, the shrink family, celu, squareplus, sparse_plus / sparse_sigmoid
(activations.glsl), sparsemax and glu along an axis.
"""
from __future__ import annotations

from ...ops import elementwise, softmax
from ...ops.math_extra import sparsemax
from ...tensors import ownership
from ..node import OpNode, _shape, register_op
from ..numpy.arithmetic import UnaryOp
from ..numpy.statistics import _AlongAxisOp, _take


@register_op("Softmax", "LogSoftmax")
class SoftmaxOp(OpNode):
    input_dtypes = ("float32",)
    params = ("x", "axis")
    shaders = ("softmax.comp",)

    def run(self, bound):
        axis = self.opt(bound, "axis", -1)
        axis = tuple(axis) if isinstance(axis, list) else axis
        function = softmax.log_softmax if self.class_name == "LogSoftmax" else softmax.softmax
        return function(bound["x"], axis)


# keras.ops.nn activation class -> (act_ function of activations.glsl, its option and default).
_ACTIVATIONS = {"LogSigmoid": ("log_sigmoid", None, None), "HardTanh": ("hard_tanh", None, None),
                "HardShrink": ("hard_shrink", "threshold", 0.5),
                "SoftShrink": ("soft_shrink", "threshold", 0.5),
                "TanhShrink": ("tanh_shrink", None, None), "Celu": ("celu", "alpha", 1.0),
                "Squareplus": ("squareplus", "b", 4.0), "SparsePlus": ("sparse_plus", None, None),
                "SparseSigmoid": ("sparse_sigmoid", None, None)}


@register_op(*_ACTIVATIONS)
class ActivationOp(UnaryOp):
    """keras.ops.nn activations as activations.glsl computes them (jax.nn's formulas)."""

    def function(self, bound):
        name, option, default = _ACTIVATIONS[self.class_name]
        return name, (() if option is None else (float(self.opt(bound, option, default)),))


@register_op("Sparsemax")
class SparsemaxOp(_AlongAxisOp):
    shaders = ("sparsemax.comp",)

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        self.axis_of(shape)
        return shape

    def run(self, bound):
        return sparsemax(bound["x"], self.axis_of(bound["x"].shape))


@register_op("Glu")
class GluOp(_AlongAxisOp):
    """jax.nn.glu: the first half along the axis times the sigmoid of the second."""
    shaders = ("strided_slice.comp", "unary.comp", "binary.comp")

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        axis = self.axis_of(shape)
        if shape[axis] is not None and shape[axis] % 2:
            raise self.shape_error(f"axis {axis} of size {shape[axis]} cannot be halved.")
        return shape[:axis] + (None if shape[axis] is None else shape[axis] // 2,) + shape[axis + 1:]

    def run(self, bound):
        x = bound["x"]
        axis = self.axis_of(x.shape)
        half = x.shape[axis] // 2
        return ownership.tidy.run(lambda: elementwise.mul(_take(x, axis, 0, half), elementwise.unary(
            "sigmoid", _take(x, axis, half, half))))
