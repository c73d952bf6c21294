"""keras.ops.math (keras/src/ops/math.py) reductions and rankings as recorded in Keras 3 graphs:
logsumexp, top_k and in_top_k (ops/sorting.py: jax's ties and NaN order), and cdist (pairwise
p-norm distances).
"""
from __future__ import annotations

from ...layers.typed_shapes import broadcast_dims, dtype_of, typed
from ...ops import elementwise, layout, reduce, sorting
from ...tensors import ownership
from ..node import OpNode, Symbolic, _shape, register_op
from ..numpy.joining import _is_int
from ..numpy.reductions import ReduceOp, _keepdims_axis


@register_op("Logsumexp")
class LogSumExpOp(ReduceOp):
    """log(sum(exp(x))) shifted by the maximum (as jax.scipy.special.logsumexp) so that large
    inputs do not overflow."""
    shaders = ("reduce.comp", "binary.comp", "unary.comp")

    def run(self, bound):
        x, axis = bound["x"], _keepdims_axis(self.opt(bound, "axis"))
        keepdims = bool(self.opt(bound, "keepdims", False))

        def compute():
            peak = reduce.reduce("max", x, axis, True)
            total = reduce.reduce("sum", elementwise.unary("exp", elementwise.sub(x, peak)), axis, True)
            out = elementwise.add(elementwise.unary("log", total), peak)
            if not keepdims:
                out = reduce.reduce("sum", out, axis, False)     # drops the size-1 axes
            return out
        return ownership.tidy.run(compute)


@register_op("TopK")
class TopKOp(OpNode):
    """lax.top_k along the last axis: [values (the input's dtype), int32 indices]; `sorted=False`
    gets the sorted result, as on Keras's JAX backend."""
    params = ("x", "k", "sorted")
    shaders = ("sort_rank.comp",)
    input_dtypes = ("float32", "int32", "bool")

    def k(self, bound, length):
        k = self.opt(bound, "k")
        if not _is_int(k) or k < 0:
            raise self.unsupported(f"k={k!r} (an integer >= 0)")
        if length is not None and k > length:
            raise self.shape_error(f"k={k} is larger than the last axis ({length}).")
        return k

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        if not shape:
            raise self.shape_error("top_k of a scalar.")
        out = tuple(shape[:-1]) + (self.k(bound, shape[-1]),)
        return [out, out]

    def node_output_shape(self, args, kwargs):
        values, indices = super().node_output_shape(args, kwargs)
        dtype = dtype_of(_shape(self.bind(args, kwargs)["x"]))
        return [typed(values, dtype), typed(indices, "int32")]

    def run(self, bound):
        x = bound["x"]
        return sorting.top_k(x, self.k(bound, x.shape[-1]))


@register_op("InTopK")
class InTopKOp(OpNode):
    """keras.ops.in_top_k(targets, predictions, k) -> bool, as Keras's JAX backend computes it (a
    NaN prediction of the target counts as -inf; ties count in its favour)."""
    params = ("targets", "predictions", "k")
    shaders = ("in_top_k.comp",)
    output_dtype = "bool"

    def result_dtype(self, bound, dtypes):
        for name, dtype in (("targets", "int32"), ("predictions", "float32")):
            got = dtype_of(_shape(bound.get(name)))
            if not isinstance(bound.get(name), Symbolic) or got != dtype:
                raise self.unsupported(f"{name} that are not a {dtype} tensor")
        return "bool"

    def k(self, bound):
        k = self.opt(bound, "k")
        if not _is_int(k):
            raise self.unsupported(f"k={k!r} (one integer)")
        return k

    def output_shape(self, bound):
        targets, predictions = _shape(bound["targets"]), _shape(bound["predictions"])
        self.k(bound)
        if len(predictions) != len(targets) + 1 or any(
                a is not None and b is not None and a != b
                for a, b in zip(targets, predictions)):
            raise self.shape_error(f"predictions of shape {list(predictions)} for targets of "
                                   f"shape {list(targets)}.")
        return targets

    def run(self, bound):
        return sorting.in_top_k(bound["targets"], bound["predictions"], self.k(bound))


@register_op("CDist")
class CDistOp(OpNode):
    """cdist(x, y): the Euclidean distance between the rows of x (..., M, D) and y (..., N, D)
    -> (..., M, N), leading dimensions broadcast, as Keras computes it (the differences squared
    and summed)."""
    params = ("x", "y")
    input_dtypes = ("float32",)
    shaders = ("binary.comp", "unary.comp", "reduce.comp")

    def output_shape(self, bound):
        x, y = _shape(bound["x"]), _shape(bound["y"])
        if len(x) < 2 or len(y) < 2:
            raise self.shape_error("cdist needs inputs of rank >= 2.")
        if None not in (x[-1], y[-1]) and x[-1] != y[-1]:
            raise self.shape_error(f"last dimensions differ: {list(x)} and {list(y)}.")
        lead = broadcast_dims(x[:-2], y[:-2], f"Layer '{self.name}'")
        return tuple(lead) + (x[-2], y[-2])

    def run(self, bound):
        x, y = bound["x"], bound["y"]

        def compute():
            rows = layout.reshape(x, x.shape[:-1] + (1, x.shape[-1]))
            cols = layout.reshape(y, y.shape[:-2] + (1,) + y.shape[-2:])
            squared = elementwise.unary("square", elementwise.binary("sub", rows, cols))
            return elementwise.unary("sqrt", reduce.reduce("sum", squared, axis=-1))
        return ownership.tidy.run(compute)
