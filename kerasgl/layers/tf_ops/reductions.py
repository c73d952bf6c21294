"""TensorFlow reductions: reduce_sum / mean / max / min / prod / std / variance / logsumexp /
any / all over an axis or a list of axes (keepdims; compat.v1's keep_dims and
reduction_indices), and argmax / argmin (int64 in TensorFlow: kerasgl's int32).

A reduction over the batch axis would make each sample's result depend on the others that
predict happens to batch with it: refused at load, as is any axis list that is not static.
"""
from __future__ import annotations

from ...ops import arg_ops, elementwise, math_extra, reduce, typed as typed_ops
from ...tensors.tensor import view
from .functions import TFFunction, register


def checked_axes(function, x, axis, one: bool = False) -> tuple:
    """`axis` (None: all; an int; a list) as sorted non-negative axes of x, refusing the batch
    axis (an axis 0 of unknown size) and, with `one`, more or fewer than one axis."""
    rank = x.ndim
    if axis is None:
        axes = list(range(rank))
    elif isinstance(axis, (list, tuple)):
        axes = list(axis)
    else:
        axes = [axis]
    if any(not isinstance(a, int) or isinstance(a, bool) for a in axes):
        raise function.unsupported(f"axis={axis!r}")
    for a in axes:
        if not -rank <= a < rank:
            raise function.shape_error(f"axis {a} is out of range for a tensor of rank {rank}.")
    axes = sorted({a % rank for a in axes})
    if one and len(axes) != 1:
        raise function.unsupported(f"axis={axis!r} (one axis)")
    if 0 in axes and rank and x.shape[0] is None:
        raise function.unsupported("a reduction over the batch axis (each sample's result would "
                                   "depend on the samples predict batches it with)")
    return tuple(axes)


def reduced_shape(shape, axes, keepdims: bool) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class Reduction(TFFunction):
    """reduce_<fixed op>(input_tensor, axis, keepdims)."""
    params = ("input_tensor", "axis", "keepdims")
    aliases = {"keep_dims": "keepdims", "reduction_indices": "axis"}
    shaders = ("reduce.comp", "line_reduce.comp", "unary.comp", "binary.comp")
    FLOAT = ("sum", "mean", "max", "min", "prod", "std", "variance", "logsumexp")
    INT = ("sum", "max", "min")

    def plan(self, args):
        x = args.tensor("input_tensor")
        op = self.fixed["op"]
        allowed = ("bool",) if op in ("any", "all") else (
            ("float32", "int32") if op in self.INT else ("float32",))
        if x.dtype not in allowed:
            raise self.unsupported(f"a {x.dtype} tensor")
        self.dtype = self.out_dtype = x.dtype
        self.axes = checked_axes(self, x, args.static("axis", None))
        self.keepdims = bool(args.get("keepdims", False))
        return reduced_shape(x.shape, self.axes, self.keepdims)

    def run(self, args):
        x, op = args.tensor("input_tensor"), self.fixed["op"]
        axes, keep = self.axes, self.keepdims
        if op in ("any", "all"):     # over 0 / 1 words
            return reduce.reduce_words("max" if op == "any" else "min", x, axes, keep, "bool")
        if self.dtype == "int32":
            return reduce.reduce_words(op, x, axes, keep, "int32")
        if op in ("sum", "mean", "max", "min"):
            return reduce.reduce(op, x, axes, keep)
        if op == "prod":
            return math_extra.line_reduce("prod", x, axes, keep)
        if op == "logsumexp":
            return _logsumexp(x, axes, keep)
        variance = _variance(x, axes, keep)
        return elementwise.unary("sqrt", variance) if op == "std" else variance


def _variance(x, axes, keepdims: bool):
    """TensorFlow's reduce_variance: the mean of squared deviations from the mean."""
    deviations = elementwise.sub(x, reduce.reduce("mean", x, axes, True))
    return reduce.reduce("mean", elementwise.unary("square", deviations), axes, keepdims)


def _logsumexp(x, axes, keepdims: bool):
    """TensorFlow's reduce_logsumexp: log(sum(exp(x - m))) + m, m the maximum where it is
    finite, else 0."""
    peak = reduce.reduce("max", x, axes, True)
    finite = typed_ops.unary("isfinite", peak, "bool")
    shift = typed_ops.where(finite, peak, 0.0, "float32")
    total = reduce.reduce("sum", elementwise.unary("exp", elementwise.sub(x, shift)), axes,
                          keepdims)
    return elementwise.add(elementwise.unary("log", total), view(shift, total.shape))


register(Reduction, {f"math.reduce_{op}": {"op": op} for op in
                     ("sum", "mean", "max", "min", "prod", "std", "variance", "logsumexp",
                      "any", "all")})


class ArgReduce(TFFunction):
    """argmax / argmin (fixed `smallest`) along one axis (TensorFlow's default: axis 0)."""
    params = ("input", "axis", "output_type", "name", "dimension")
    aliases = {"dimension": "axis"}
    shaders = ("arg_reduce.comp",)

    def plan(self, args):
        x = args.tensor("input")
        if x.dtype != "float32":
            raise self.unsupported(f"a {x.dtype} tensor")
        if str(args.get("output_type", "int64")) not in ("int32", "int64"):
            raise self.unsupported(f"output_type={args.get('output_type')!r}")
        (self.axis,) = checked_axes(self, x, args.static("axis", 0), one=True)
        self.out_dtype = "int32"
        return x.shape[:self.axis] + x.shape[self.axis + 1:]

    def run(self, args):
        return arg_ops.arg_reduce(args.tensor("input"), self.axis, self.fixed["smallest"])


register(ArgReduce, {"math.argmax": {"smallest": False}, "math.argmin": {"smallest": True}})
