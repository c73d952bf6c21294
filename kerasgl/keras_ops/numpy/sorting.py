"""keras.ops.numpy (keras/src/ops/numpy.py) operations that sort or rank, as recorded in Keras 3
graphs: sort, argsort,
argpartition, median / quantile / percentile and their NaN-skipping forms, searchsorted and
digitize (kerasgl/ops/sorting.py). Each gives jax's result exactly, ties, NaNs and -0 included.

Keras's Quantile operation does not hand its `method` to the backend (keras.src.ops.numpy
Quantile.call), so a Keras model computes the linear quantile whatever the method says; kerasgl
computes what Keras does. Percentile and the Nan* operations honour the method.

The operations whose output's shape depends on the values, or that count over the whole batch,
are refused at load (below).
"""
from __future__ import annotations

import math

import numpy as np

from ...layers.refusals import refuse_ops
from ...ops import sorting
from ..node import OpNode, Symbolic, _shape, register_op

refuse_ops({
    "Unique": "its output's shape depends on the values, which a GPU plan cannot have (with "
              "size= it is fixed, but the values are then made unique across the whole batch)",
    "Nonzero": "its output's shape depends on the values, which a GPU plan cannot have",
    "Bincount": "its output's length depends on the largest value, which a GPU plan cannot have",
    "Histogram": "it counts over its whole 1-D input, which in a model is the batch axis, and its "
                 "result has no batch axis",
})


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _AxisOp(OpNode):
    """An op along one axis: axis=None (the flattened batch) is refused at load."""
    params = ("x", "axis")
    input_dtypes = ("float32", "int32")
    default_axis = -1

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if "axis" in self.options and self.options["axis"] is None:   # refused with the others
            self.axis(self.options, 1)

    def axis(self, bound, rank: int) -> int:
        axis = self.opt(bound, "axis", self.default_axis)
        if axis is None:
            raise self.unsupported("axis=None (the whole batch flattened into one line)")
        if not _is_int(axis) or not -rank <= axis < rank:
            raise self.shape_error(f"axis {axis!r} is out of range for rank {rank}.")
        return axis % rank

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        self.axis(bound, len(shape))
        return shape


@register_op("Sort")
class SortOp(_AxisOp):
    """jnp.sort: NaNs last, -0 and +0 equal (each keeps its sign), ties in their order."""
    shaders = ("sort_rank.comp",)
    keeps_dtype = True

    def run(self, bound):
        x = bound["x"]
        return sorting.sort(x, self.axis(bound, x.ndim))


@register_op("Argsort")
class ArgsortOp(_AxisOp):
    """jnp.argsort (stable) as int32."""
    shaders = ("sort_rank.comp",)
    input_dtypes = ("float32", "int32", "bool")
    output_dtype = "int32"

    def run(self, bound):
        x = bound["x"]
        return sorting.sort(x, self.axis(bound, x.ndim), values=False, indices=True)


@register_op("Argpartition")
class ArgpartitionOp(_AxisOp):
    """jnp.argpartition as int32: jax builds it from two lax.top_k calls, so its order is fixed
    (the kth+1 smallest as top_k(-x) orders them, then the rest by index), and kerasgl gives it."""
    params = ("x", "kth", "axis")
    shaders = ("sort_rank.comp",)
    output_dtype = "int32"

    def kth(self, bound, length):
        kth = self.opt(bound, "kth")
        if not _is_int(kth):
            raise self.unsupported(f"kth={kth!r} (one integer)")
        if length is not None and not -length <= kth < length:
            raise self.shape_error(f"kth={kth} is out of range for an axis of {length}.")
        return kth

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        self.kth(bound, shape[self.axis(bound, len(shape))])
        return shape

    def run(self, bound):
        x = bound["x"]
        axis = self.axis(bound, x.ndim)
        return sorting.argpartition(x, self.kth(bound, x.shape[axis]), axis)


class _QuantileBase(OpNode):
    """Quantiles over an int or a list of axes (axis=None, the whole batch, is refused)."""
    params = ("x", "q", "axis", "method", "keepdims")
    shaders = ("sort_rank.comp", "quantile.comp", "transpose.comp", "cast.comp")
    input_dtypes = ("float32", "int32")
    skip_nan = False
    percent = False

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.method(self.options)
        if "axis" in self.options and self.options["axis"] is None:   # refused with the others
            self.axes(self.options, 1)

    def method(self, bound):
        method = self.opt(bound, "method", "linear")
        if method not in sorting.METHODS:
            raise self.unsupported(f"method={method!r}")
        return method

    def axes(self, bound, rank):
        axis = self.opt(bound, "axis")
        if axis is None:
            raise self.unsupported("axis=None (one result for the whole batch)")
        axes = (axis,) if _is_int(axis) else tuple(axis)
        if not axes or not all(_is_int(a) and -rank <= a < rank for a in axes) \
                or len({a % rank for a in axes}) != len(axes):
            raise self.shape_error(f"axis {axis!r} does not name distinct axes of rank {rank}.")
        return tuple(sorted(a % rank for a in axes))

    def q(self, bound):
        q = self.opt(bound, "q")
        if isinstance(q, Symbolic) or hasattr(q, "shape") and not isinstance(q, (int, float)):
            shape = _shape(q) if isinstance(q, Symbolic) else tuple(q.shape)
            host = isinstance(q, np.ndarray)          # an integer array saved in the call
            if len(shape) > 1 or None in shape or host and (
                    q.dtype.kind not in "iuf" or math.prod(shape) > sorting.MAX_Q):
                raise self.unsupported(f"q of shape {list(shape)} (a number, a 1-D tensor or at "
                                       f"most {sorting.MAX_Q} numbers)")
            return q, shape
        numbers = list(q) if isinstance(q, (list, tuple)) else [q]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers) \
                or len(numbers) > sorting.MAX_Q:
            raise self.unsupported(f"q={q!r} (a number or at most {sorting.MAX_Q} numbers)")
        return q, ((len(numbers),) if isinstance(q, (list, tuple)) else ())

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        self.method(bound)
        _, q_shape = self.q(bound)
        return sorting.quantile_shape(shape, self.axes(bound, len(shape)), q_shape,
                                      bool(self.opt(bound, "keepdims", False)))

    def run(self, bound):
        x = bound["x"]
        q, _ = self.q(bound)
        return sorting.quantile(x, q, self.axes(bound, x.ndim), self.method(bound),
                                bool(self.opt(bound, "keepdims", False)), self.skip_nan,
                                self.percent)


@register_op("Quantile")
class QuantileOp(_QuantileBase):
    def method(self, bound):
        return "linear"            # Keras's Quantile.call does not pass its method on


@register_op("Nanquantile")
class NanquantileOp(_QuantileBase):
    skip_nan = True


@register_op("Percentile")
class PercentileOp(_QuantileBase):
    percent = True


@register_op("Nanpercentile")
class NanpercentileOp(_QuantileBase):
    skip_nan = True
    percent = True


@register_op("Median", "Nanmedian")
class MedianOp(_QuantileBase):
    """jnp.median: the 0.5 quantile by the midpoint method (nanmedian skips NaNs)."""
    params = ("x", "axis", "keepdims")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.skip_nan = self.class_name == "Nanmedian"

    def method(self, bound):
        return "midpoint"

    def q(self, bound):
        return 0.5, ()


@register_op("SearchSorted")
class SearchSortedOp(OpNode):
    """jnp.searchsorted(sorted_sequence, values, side) as int32, by jax's own binary search (so an
    unsorted sequence gives jax's answer too); the 1-D sequence is a tensor (a float constant
    saved with the model is one) or integers saved with the model."""
    params = ("sorted_sequence", "values", "side")
    shaders = ("search_sorted.comp",)
    input_dtypes = ("float32",)
    output_dtype = "int32"

    def parts(self, bound):
        """(sequence, values, side)."""
        side = self.opt(bound, "side", "left")
        if side not in ("left", "right"):
            raise self.unsupported(f"side={side!r}")
        return bound["sorted_sequence"], bound["values"], side

    def check_sequence(self, sequence):
        if isinstance(sequence, Symbolic):
            shape = sequence.shape
        else:
            shape = tuple(getattr(sequence, "shape", (len(sequence),) if isinstance(
                sequence, (list, tuple)) else ()))
        if len(shape) != 1:
            raise self.shape_error(f"the sorted sequence must be 1-D, not of shape {list(shape)}.")
        if shape[0] == 0:
            raise self.unsupported("an empty sequence")
        if not isinstance(sequence, Symbolic) and shape[0] > sorting.MAX_SEQ:
            raise self.unsupported(f"a sequence of {shape[0]} numbers saved in the call (at most "
                                   f"{sorting.MAX_SEQ}; a float32 constant array has no limit)")

    def output_shape(self, bound):
        sequence, values, _ = self.parts(bound)
        self.check_sequence(sequence)
        if not isinstance(values, Symbolic):
            raise self.unsupported("values that are not a tensor")
        return values.shape

    def run(self, bound):
        sequence, values, side = self.parts(bound)
        return sorting.search_sorted(sequence, values, side, self.class_name == "Digitize")


@register_op("Digitize")
class DigitizeOp(SearchSortedOp):
    """jnp.digitize(x, bins) as int32: bins increasing or decreasing (jax's test of the ends)."""
    params = ("x", "bins")

    def parts(self, bound):
        return bound["bins"], bound["x"], "right"
