"""keras.ops.numpy (keras/src/ops/numpy.py) reductions and scans as recorded in Keras 3 graphs:
mean, sum, max, min (any axes, keepdims; exact int32 sums), any / all (bool), argmax / argmin
(int32 out), var / std, and the running cumsum / cumprod. The NaN-ignoring and other statistics
are in numpy/statistics.py.
"""
from __future__ import annotations

import math

from ...ops import elementwise, layout, reduce
from ...ops import typed
from ...ops import typed as typed_ops
from ...ops.arg_ops import arg_reduce
from ...ops.math_unary import cumulative
from ...tensors import ownership
from ..node import OpNode, Symbolic, _shape, checked_operand, register_op

# -------------------------------------------------------------------------------------------------
# Reductions
# -------------------------------------------------------------------------------------------------

@register_op("Mean", "Sum", "Max", "Min")
class ReduceOp(OpNode):
    """sum / mean / max / min over axes, typed as Keras types them (sum of bool or int32: int32;
    max / min: the input's dtype; mean: float32). int32 and bool sums, maxima and minima are
    exact int32 reductions (sums wrap around as XLA's); a mean of them is taken in float32."""
    input_dtypes = ("float32",)
    params = ("x", "axis", "keepdims")
    shaders = ("reduce.comp", "typed_unary.comp")
    _RESULTS = {"Sum": {"bool": "int32", "int32": "int32"}, "Mean": {"bool": "float32"},
                "Max": {}, "Min": {}}

    def result_dtype(self, bound, dtypes):
        if type(self) is not ReduceOp or dtypes == {"float32"}:
            return super().result_dtype(bound, dtypes)
        dtype = checked_operand(self, bound["x"], "x")
        table = self._RESULTS[self.class_name]
        return table.get(dtype, "float32" if self.class_name == "Mean" else dtype)

    def reduced(self, op: str, x, bound, out_dtype: str):
        """reduce(op) of x as out_dtype: int32 words for an int32 / bool sum, max or min (bool
        words are int32 ones), else float32 (an int32 / bool x converted first)."""
        axis = self.opt(bound, "axis")
        axis = tuple(axis) if isinstance(axis, list) else axis
        keepdims = bool(self.opt(bound, "keepdims", False))
        if x.dtype != "float32" and op != "mean" and out_dtype in ("int32", "bool"):
            return reduce.reduce_words(op, x, axis, keepdims, out_dtype)

        def compute():
            result = reduce.reduce(op, typed_ops.as_float(x)[0], axis, keepdims)
            return result if out_dtype == "float32" else typed_ops.convert(result, out_dtype)
        return ownership.tidy.run(compute)

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        axes = self.axes_of(self.opt(bound, "axis"), len(shape))
        if self.opt(bound, "keepdims", False):
            return tuple(1 if d in axes else n for d, n in enumerate(shape))
        return tuple(n for d, n in enumerate(shape) if d not in axes)

    def run(self, bound):
        x = bound["x"]
        return self.reduced(self.class_name.lower(), x, bound,
                            self.result_dtype(bound, {x.dtype}))


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
        truth = "float_truth_as_float" if x.dtype == "float32" else "int_truth_as_float"
        extreme = "max" if self.class_name == "Any" else "min"
        return ownership.tidy.run(
            lambda: self.reduced(extreme, typed.unary(truth, x, "float32"), bound, "bool"))


@register_op("Argmax", "Argmin")
class ArgReduceOp(OpNode):
    """The first index of the extreme value along `axis`."""
    params = ("x", "axis", "keepdims")
    shaders = ("arg_reduce.comp", "typed_unary.comp")
    input_dtypes = ("float32", "int32", "bool")
    output_dtype = "int32"

    def output_shape(self, bound):
        shape, axis = _shape(bound["x"]), self.opt(bound, "axis")
        keepdims = bool(self.opt(bound, "keepdims", False))
        if axis is None:     # one index for the whole batch: Keras's own predict cannot batch it
            raise self.unsupported("axis=None (an index into the flattened batch)")
        if not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
            raise self.shape_error(f"axis {axis!r} is out of range for rank {len(shape)}.")
        axis %= len(shape)
        if shape[axis] == 0:
            raise self.shape_error(f"an {self.class_name.lower()} over an empty axis.")
        return shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1:]

    def run(self, bound):
        x, axis = bound["x"], self.opt(bound, "axis")
        smallest = self.class_name == "Argmin"
        out_shape = self.output_shape({**bound, "x": Symbolic(tuple(x.shape))})

        def compute():
            found = arg_reduce(typed.as_float(x)[0], axis, smallest)
            if tuple(found.shape) == tuple(out_shape):
                return found
            return layout.reshape(found, out_shape)
        return ownership.tidy.run(compute)


def _keepdims_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


@register_op("Var", "Std")
class VarianceOp(ReduceOp):
    """mean((x - mean(x))**2) over the axes (the population variance, as jnp.var), std its root."""
    shaders = ("reduce.comp", "binary.comp", "unary.comp")

    def run(self, bound):
        x, axis = bound["x"], _keepdims_axis(self.opt(bound, "axis"))
        keepdims = bool(self.opt(bound, "keepdims", False))

        def compute():
            centred = elementwise.sub(x, reduce.reduce("mean", x, axis, True))
            var = reduce.reduce("mean", elementwise.mul(centred, centred), axis, keepdims)
            return elementwise.unary("sqrt", var) if self.class_name == "Std" else var
        return ownership.tidy.run(compute)


@register_op("Cumsum", "Cumprod")
class CumulativeOp(OpNode):
    """Running sums / products along an axis (axis None: of the flattened input), float32."""
    params = ("x", "axis", "dtype")
    shaders = ("cumulative.comp",)
    input_dtypes = ("float32",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        dtype = (self.config or {}).get("dtype")
        if dtype not in (None, "float32"):
            raise self.unsupported(f"dtype={dtype!r}")

    def output_shape(self, bound):
        shape, axis = _shape(bound["x"]), self.opt(bound, "axis")
        if bound.get("dtype") not in (None, "float32"):
            raise self.unsupported(f"dtype={bound.get('dtype')!r}")
        if axis is None:
            return (None if None in shape else math.prod(shape),)
        if not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
            raise self.shape_error(f"axis {axis!r} is out of range for rank {len(shape)}.")
        return shape

    def run(self, bound):
        x, axis = bound["x"], self.opt(bound, "axis")
        product = self.class_name == "Cumprod"
        if axis is not None:
            return cumulative(x, axis, product)
        return ownership.tidy.run(lambda: cumulative(layout.reshape(x, (x.size,)), 0, product))
