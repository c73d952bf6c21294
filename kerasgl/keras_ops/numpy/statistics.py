"""keras.ops.numpy (keras/src/ops/numpy.py) statistics beyond numpy/reductions.py, float32 in:
products, the NaN-ignoring family (nansum ... nanargmax, nancumsum), extrema (amax, amin, ptp),
weighted averages, counts (int32) and differences along an axis (diff, trapezoid, cross), each
as jnp (Keras 3's JAX backend) computes it.
"""
from __future__ import annotations

from ...layers.refusals import refuse_ops
from ...ops import elementwise, layout, reduce
from ...ops.arg_ops import cast
from ...ops.math_extra import line_reduce, math_extra
from ...ops.math_unary import cumulative
from ...ops.merge import concatenate
from ...ops.slicing import strided_slice
from ...tensors import ownership
from ..node import OpNode, _shape, broadcast_dims, register_op
from .reductions import CumulativeOp, ReduceOp

INF = float("inf")


def _axis(value):
    return tuple(value) if isinstance(value, list) else value



def _take(x, axis: int, start: int, size: int):
    """x[..., start:start + size, ...] along `axis` (a copy)."""
    window = [(0, n, 1) for n in x.shape]
    window[axis] = (start, size, 1)
    return strided_slice(x, window)


# Operation class -> line_reduce.comp's op.
_LINE = {"Prod": "prod", "Nansum": "nansum", "Nanmax": "nanmax", "Nanmin": "nanmin",
         "Nanprod": "nanprod", "Nanmean": "nanmean"}


@register_op(*_LINE)
class LineReduceOp(ReduceOp):
    """Products and NaN-ignoring sums / means / extrema over axes (an all-NaN slice: 0 for
    nansum, 1 for nanprod, NaN for the others, as jnp)."""
    shaders = ("line_reduce.comp", "transpose.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if self.options.get("dtype") not in (None, "float32"):
            raise self.unsupported(f"dtype={self.options.get('dtype')!r}")

    def run(self, bound):
        return line_reduce(_LINE[self.class_name], bound["x"], _axis(self.opt(bound, "axis")),
                           bool(self.opt(bound, "keepdims", False)))


@register_op("Amax", "Amin", "Ptp")
class ExtremaOp(ReduceOp):
    """jnp.amax / amin (NaN propagates) and ptp = amax - amin."""
    shaders = ("reduce.comp", "binary.comp")

    def run(self, bound):
        x, axis = bound["x"], _axis(self.opt(bound, "axis"))
        keepdims = bool(self.opt(bound, "keepdims", False))
        if self.class_name != "Ptp":
            return reduce.reduce("max" if self.class_name == "Amax" else "min", x, axis, keepdims)
        return ownership.tidy.run(lambda: elementwise.sub(reduce.reduce("max", x, axis, keepdims),
                                             reduce.reduce("min", x, axis, keepdims)))


@register_op("Nanvar", "Nanstd")
class NanVarianceOp(ReduceOp):
    """jnp.nanvar: the mean of the squared deviations from the nanmean over the values that are
    not NaN (ddof 0); nanstd its square root."""
    shaders = ("line_reduce.comp", "transpose.comp", "binary.comp", "unary.comp")

    def run(self, bound):
        x, axis = bound["x"], _axis(self.opt(bound, "axis"))
        keepdims = bool(self.opt(bound, "keepdims", False))

        def compute():
            centred = elementwise.sub(x, line_reduce("nanmean", x, axis, True))
            var = line_reduce("nanmean", elementwise.mul(centred, centred), axis, keepdims)
            return elementwise.unary("sqrt", var) if self.class_name == "Nanstd" else var
        return ownership.tidy.run(compute)


@register_op("CountNonzero")
class CountNonzeroOp(ReduceOp):
    """The number of values that are not 0 (NaN counts) over axes, int32; of float32, int32 or
    bool tensors (the integer ones as float32, where no nonzero value becomes 0)."""
    params = ("x", "axis")
    input_dtypes = ("float32", "int32", "bool")
    output_dtype = "int32"
    shaders = ("line_reduce.comp", "transpose.comp", "cast.comp")

    def result_dtype(self, bound, dtypes):
        return OpNode.result_dtype(self, bound, dtypes)

    def run(self, bound):
        x = bound["x"]
        axis = _axis(self.opt(bound, "axis"))
        if x.dtype == "float32":
            return line_reduce("count_nonzero", x, axis, False)
        return ownership.tidy.run(lambda: line_reduce("count_nonzero", cast(x, "float32"), axis, False))


@register_op("Nanargmax", "Nanargmin")
class NanArgOp(ReduceOp):
    """The index of the largest / smallest value that is not NaN along one axis (None: of the
    flattened tensor), int32; -1 for an all-NaN slice, as jnp."""
    output_dtype = "int32"
    shaders = ("line_reduce.comp",)

    def output_shape(self, bound):
        if not isinstance(self.opt(bound, "axis"), (int, type(None))):
            raise self.unsupported(f"axis={self.opt(bound, 'axis')!r} (one axis or None)")
        return super().output_shape(bound)

    def run(self, bound):
        op = "nanargmax" if self.class_name == "Nanargmax" else "nanargmin"
        return line_reduce(op, bound["x"], self.opt(bound, "axis"),
                           bool(self.opt(bound, "keepdims", False)))


@register_op("Nancumsum", "Nancumprod")
class NanCumulativeOp(CumulativeOp):
    """cumsum / cumprod with NaN read as 0 / 1 (jnp.nancumsum / nancumprod)."""
    shaders = ("math_extra.comp", "cumulative.comp")

    def run(self, bound):
        x, axis = bound["x"], self.opt(bound, "axis")
        product = self.class_name == "Nancumprod"

        def compute():
            clean = math_extra("nan_to_num", x, 1.0 if product else 0.0, INF, -INF)
            if axis is None:
                return cumulative(layout.reshape(clean, (clean.size,)), 0, product)
            return cumulative(clean, axis, product)
        return ownership.tidy.run(compute)


@register_op("Average")
class AverageOp(OpNode):
    """jnp.average: the mean, or with weights sum(x * w) / sum(w) over `axis` (None or one axis);
    weights of x's shape, or 1-D along that axis."""
    params = ("x", "weights")
    input_dtypes = ("float32",)
    shaders = ("reduce.comp", "binary.comp")

    def axes(self, shape):
        axis = self.options.get("axis")
        if not isinstance(axis, (int, type(None))):
            raise self.unsupported(f"axis={axis!r} (one axis or None)")
        return self.axes_of(axis, len(shape))

    def output_shape(self, bound):
        shape, weights = _shape(bound["x"]), bound.get("weights")
        axes = self.axes(shape)
        if weights is not None and not hasattr(weights, "shape"):
            raise self.unsupported("weights that are not a tensor")
        if weights is not None:
            w = _shape(weights)
            if not (len(w) == len(shape) or (len(w) == 1 and len(axes) == 1)):
                raise self.shape_error(f"weights of shape {list(w)} for x of shape {list(shape)}.")
        return tuple(n for d, n in enumerate(shape) if d not in axes)

    def run(self, bound):
        x, weights = bound["x"], bound.get("weights")
        axes = self.axes(x.shape)
        if weights is None:
            return reduce.reduce("mean", x, axes)

        def compute():
            w = weights
            if w.ndim == 1 and x.ndim > 1:
                w = layout.reshape(w, tuple(-1 if d == axes[0] else 1 for d in range(x.ndim)))
            total = reduce.reduce("sum", elementwise.mul(x, w), axes)
            return elementwise.div(total, reduce.reduce("sum", w, axes))
        return ownership.tidy.run(compute)


class _AlongAxisOp(OpNode):
    """An op along one axis (the `axis` option, default -1) of its first argument."""
    input_dtypes = ("float32",)

    def axis_of(self, shape) -> int:
        axis = self.options.get("axis", -1)
        if not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
            raise self.shape_error(f"axis {axis!r} is out of range for rank {len(shape)}.")
        return axis % len(shape)


@register_op("Diff")
class DiffOp(_AlongAxisOp):
    """jnp.diff: n-th differences a[1:] - a[:-1] along the axis."""
    params = ("a",)
    shaders = ("strided_slice.comp", "binary.comp")

    def order(self) -> int:
        n = self.options.get("n", 1)
        if not isinstance(n, int) or n < 0:
            raise self.unsupported(f"n={n!r}")
        return n

    def output_shape(self, bound):
        shape = _shape(bound["a"])
        axis, n = self.axis_of(shape), self.order()
        size = None if shape[axis] is None else max(shape[axis] - n, 0)
        return shape[:axis] + (size,) + shape[axis + 1:]

    def run(self, bound):
        a = bound["a"]
        axis, n = self.axis_of(a.shape), self.order()

        def compute():
            current = layout.copy(a)
            for _ in range(min(n, a.shape[axis])):
                size = current.shape[axis] - 1
                current = elementwise.sub(_take(current, axis, 1, size), _take(current, axis, 0, size))
            return current
        return ownership.tidy.run(compute)


@register_op("Trapezoid")
class TrapezoidOp(_AlongAxisOp):
    """jnp.trapezoid with a constant spacing dx: 0.5 * sum(dx * (y[1:] + y[:-1])) along the
    axis. Sample positions (x) are refused."""
    params = ("y",)
    shaders = ("strided_slice.comp", "binary.comp", "reduce.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if self.options.get("x") is not None:
            raise self.unsupported("sample positions x (only a constant spacing dx)")
        if not isinstance(self.options.get("dx", 1.0), (int, float)):
            raise self.unsupported(f"dx={self.options.get('dx')!r} (a number is needed)")

    def output_shape(self, bound):
        shape = _shape(bound["y"])
        axis = self.axis_of(shape)
        return shape[:axis] + shape[axis + 1:]

    def run(self, bound):
        y = bound["y"]
        axis = self.axis_of(y.shape)
        size = max(y.shape[axis] - 1, 0)
        dx = float(self.options.get("dx", 1.0))

        def compute():
            pairs = elementwise.add(_take(y, axis, 1, size), _take(y, axis, 0, size))
            total = reduce.reduce("sum", elementwise.mul(pairs, dx), axis)
            return elementwise.mul(total, 0.5)
        return ownership.tidy.run(compute)


@register_op("Cross")
class CrossOp(OpNode):
    """jnp.cross of 3-vectors (or 2-vectors: the z component) along the same axis of both
    arguments (and of the result)."""
    params = ("x1", "x2")
    input_dtypes = ("float32",)
    shaders = ("strided_slice.comp", "binary.comp", "concat.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.axis_of(None, None)            # the options: refused with the other layers

    def axis_of(self, a, b) -> int:
        o = self.options
        axes = {o.get("axis")} if o.get("axis") is not None else \
            {o.get("axisa", -1), o.get("axisb", -1), o.get("axisc", -1)}
        if len(axes) != 1 or not isinstance(next(iter(axes)), int) or (
                a is not None and len(a) != len(b) and axes != {-1}):
            raise self.unsupported(f"axisa / axisb / axisc / axis = {o.get('axisa', -1)!r} / "
                                   f"{o.get('axisb', -1)!r} / {o.get('axisc', -1)!r} / "
                                   f"{o.get('axis')!r} (one axis for all)")
        axis = axes.pop()
        if a is None:
            return axis
        if not -min(len(a), len(b)) <= axis < min(len(a), len(b)):
            raise self.shape_error(f"axis {axis} is out of range.")
        if {a[axis], b[axis]} not in ({3}, {2}):
            raise self.unsupported(f"vectors of sizes {a[axis]} and {b[axis]} (3 and 3, or 2 and 2)")
        return axis

    def output_shape(self, bound):
        a, b = _shape(bound["x1"]), _shape(bound["x2"])
        axis = self.axis_of(a, b)
        out = broadcast_dims(a, b, f"Layer '{self.name}'")
        if a[axis] == 2:                  # the z component alone: the vector axis goes
            axis %= len(out)
            return out[:axis] + out[axis + 1:]
        return out

    def run(self, bound):
        a, b = bound["x1"], bound["x2"]
        axis = self.axis_of(a.shape, b.shape)
        aa, ab = axis % a.ndim, axis % b.ndim
        n = a.shape[aa]

        def compute():
            ca = [_take(a, aa, i, 1) for i in range(n)]
            cb = [_take(b, ab, i, 1) for i in range(n)]

            def term(i, j):
                return elementwise.sub(elementwise.mul(ca[i], cb[j]), elementwise.mul(ca[j], cb[i]))
            if n == 2:
                z = term(0, 1)
                return layout.reshape(z, z.shape[:axis % z.ndim] + z.shape[axis % z.ndim + 1:])
            return concatenate([term(1, 2), term(2, 0), term(0, 1)], axis)
        return ownership.tidy.run(compute)


refuse_ops({
    "Correlate": "numpy's correlation of two 1-D arrays: in a Keras model its arguments' only axis "
                 "is the batch axis, which kerasgl splits into batches",
    "Corrcoef": "it correlates the rows of its 2-D argument, the samples of a batch, so its "
                "result would depend on how predict splits the batches",
})
