"""keras.ops.core (keras/src/ops/core.py) as recorded in Keras 3 graphs: cast and saturate_cast
between float32, int32 and bool, slice (static starts and sizes), slice_update of a per-sample
region (start 0 on the batch axis, updates with the batch's size), unstack, convert_to_tensor
(an identity on a tensor). scatter, scatter_update, the segment reductions (which address the
batch dimension itself) and the control-flow operations that call Python functions are refused
at load, each with why.
"""
from __future__ import annotations

import numpy as np

from ..layers.refusals import refuse_ops
from ..ops import tile_repeat_pad
from ..ops import typed as typed_ops
from ..ops.slicing import strided_slice
from ..tensors import ownership
from ..tensors.tensor import view
from .node import OpNode, _shape, checked_operand, register_op, requested_dtype
from .numpy.joining import _is_int
from .numpy.rearranging import IndexMapOp

_BATCH_MIXED = ("so its answer would depend on how predict splits the batch")


_CALLABLE = ("it calls a Python function of the model's code (Keras saves it as a pickled "
             "lambda or not at all), which kerasgl never runs")


_SEGMENTS = ("its segment ids select rows along axis 0, the batch dimension, so a segment "
             "mixes samples and its answer would depend on how predict splits the batch")


@register_op("SliceUpdate")
class SliceUpdateOp(OpNode):
    """slice_update(inputs, start_indices, updates): inputs with the region at start_indices
    replaced by updates, each start clamped so that the region fits (as XLA's
    dynamic_update_slice). The starts must be constant ints, 0 on the batch axis, and updates a
    tensor with the batch dimension: anything else addresses other samples of the batch (its
    answer would depend on how predict splits it)."""
    params = ("inputs", "start_indices", "updates")
    input_dtypes = ("float32", "int32")
    keeps_dtype = True
    shaders = ("tile_repeat_pad.comp", "where.comp")

    def starts(self, bound, in_shape, up_shape):
        start = bound.get("start_indices")
        if not isinstance(start, (list, tuple)) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in start):
            raise self.unsupported(f"start_indices={start!r} (constant ints are needed)")
        if len(start) != len(in_shape) or len(up_shape) != len(in_shape):
            raise self.shape_error(f"inputs {list(in_shape)}, start_indices {list(start)} and "
                                   f"updates {list(up_shape)} differ in rank.")
        return tuple(start)

    def output_shape(self, bound):
        in_shape, up_shape = _shape(bound["inputs"]), _shape(bound.get("updates"))
        start = self.starts(bound, in_shape, up_shape)
        if start[0] != 0 or up_shape[0] is not None or in_shape[0] is not None:
            raise self.unsupported(f"start_indices={list(start)} with updates of shape "
                                   f"{list(up_shape)} (only a per-sample region runs: start 0 "
                                   "on the batch axis and updates of the batch's size; others "
                                   "would mix samples of the batch)")
        for n, u in zip(in_shape[1:], up_shape[1:]):
            if n is None or u is None or u > n:
                raise self.unsupported(f"updates of shape {list(up_shape)} into inputs of "
                                       f"shape {list(in_shape)} (known sizes that fit needed)")
        return in_shape

    def mask(self, shape, start, size):
        """The bool mask of the region (no batch axis), uploaded once per shape."""
        cache = self.__dict__.setdefault("_masks", {})
        key = (shape, start, size)
        if key not in cache:
            words = np.zeros(shape, np.int32)
            words[tuple(slice(a, a + u) for a, u in zip(start, size))] = 1
            cache[key] = self.upload(words, dtype="bool", name=f"mask{len(cache)}")
        return cache[key]

    def run(self, bound):
        x, updates = bound["inputs"], bound["updates"]
        start = self.starts(bound, x.shape, updates.shape)
        start = tuple(min(max(a, 0), n - u) for a, n, u in zip(start, x.shape, updates.shape))
        if updates.shape[0] != x.shape[0]:
            raise self.shape_error(f"updates of batch {updates.shape[0]} into inputs of batch "
                                   f"{x.shape[0]}.")
        mask = self.mask(x.shape[1:], start[1:], updates.shape[1:])
        padding = [(a, n - a - u) for a, n, u in zip(start, x.shape, updates.shape)]
        return ownership.tidy.run(lambda: typed_ops.where(
            mask, tile_repeat_pad.pad_constant(updates, padding), x, x.dtype))


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
        return view(x, x.shape) if dtype == x.dtype else typed_ops.convert(x, dtype)


@register_op("Slice")
class SliceOp(OpNode):
    """keras.ops.slice(inputs, start_indices, shape): a window of a fixed shape. Starts past the
    end are clamped so the window fits, as jax.lax.dynamic_slice does."""
    params = ("inputs", "start_indices", "shape")
    shaders = ("strided_slice.comp",)
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def sizes(self, bound, rank):
        starts, sizes = self.opt(bound, "start_indices"), self.opt(bound, "shape")
        if not isinstance(starts, list) or not isinstance(sizes, list) \
                or not all(_is_int(v) for v in starts + sizes):
            raise self.unsupported("start indices or a shape that are not lists of integers")
        if len(starts) != rank or len(sizes) != rank:
            raise self.shape_error(f"start_indices {starts} and shape {sizes} must have one entry "
                                   f"per axis of the rank-{rank} input.")
        return starts, sizes

    def output_shape(self, bound):
        shape = _shape(bound["inputs"])
        starts, sizes = self.sizes(bound, len(shape))
        for dim, size in zip(shape, sizes):
            if size < 0 or (dim is not None and size > dim):
                raise self.shape_error(f"a window of shape {sizes} does not fit the input shape "
                                       f"{list(shape)}.")
        return tuple(sizes)

    def run(self, bound):
        x = bound["inputs"]
        starts, sizes = self.sizes(bound, x.ndim)
        window = [(min(max(start, 0), dim - size) if size else 0, size, 1)
                  for start, size, dim in zip(starts, sizes, x.shape)]
        return strided_slice(x, window)


# Keras dtype -> what a cast to it gives under JAX without x64: int64 / float64 values are int32 /
# float32 there (Keras's predict returns those).
CAST_TARGETS = {"float32": "float32", "int32": "int32", "bool": "bool", "int64": "int32",
                "float64": "float32"}


@register_op("Cast")
class CastOp(OpNode):
    """keras.ops.cast between float32, int32 and bool (float -> int32 toward zero, saturating,
    NaN -> 0, as XLA converts; -> bool: nonzero); int64 / float64 give int32 / float32, as Keras
    does under JAX. Other dtypes (float16, bfloat16, uint8, int8, ...) are refused at load:
    kerasgl's result would not have Keras's dtype."""
    params = ("x", "dtype")
    shaders = ("typed_unary.comp",)
    input_dtypes = ("float32", "int32", "bool")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.target = (self.config or {}).get("dtype")
        if self.target not in CAST_TARGETS:
            raise self.unsupported(f"a cast to {self.target!r} (kerasgl holds float32, int32 and "
                                   "bool; Keras's result would have that dtype)")
        self.output_dtype = CAST_TARGETS[self.target]

    def output_shape(self, bound):
        if bound.get("dtype", self.target) != self.target:
            raise self.unsupported(f"a cast to {bound.get('dtype')!r}")
        return tuple(_shape(bound["x"]))

    def run(self, bound):
        return typed_ops.convert(bound["x"], self.output_dtype)


@register_op("Unstack")
class UnstackOp(IndexMapOp):
    params = ("x", "num", "axis")

    def mapping(self, bound):
        x, axis, num = bound["x"], int(self.opt(bound, "axis", 0)), self.opt(bound, "num")
        if num is not None and num != x.shape[axis]:
            raise ValueError(f"num={num} does not match the size {x.shape[axis]} of axis {axis}")
        return [np.take(x, i, axis) for i in range(x.shape[axis])]


@register_op("SaturateCast")
class SaturateCastOp(OpNode):
    """saturate_cast to float32 / int32 / bool as Keras 3.15 computes it: clipped to limits that
    both dtypes hold, then cast. float32 -> int32: saturating at
    [-2**31, 2**31 - 1], NaN -> 0; float32 -> float32: infinities to +-3.4028235e38; -> bool:
    clipped to [0, 1], so True where positive (or NaN). int32 -> float32 is refused: Keras's
    upper limit overflows int32 and its answer is -2**31 everywhere. Other targets are dtypes
    kerasgl has no tensors of."""
    shaders = ("typed_unary.comp", "typed_binary.comp", "where.comp")
    FLOAT_MAX = 3.4028234663852886e38

    def result_dtype(self, bound, dtypes):
        source = checked_operand(self, bound["x"], "x")
        target = requested_dtype(self, (self.config or {}).get("dtype"))
        if (source, target) == ("int32", "float32"):
            raise self.unsupported("saturate_cast of an int32 tensor to float32 (Keras 3.15's "
                                   "clip limit overflows int32: it gives -2**31 everywhere)")
        return target

    def run(self, bound):
        x = bound["x"]
        target = self.result_dtype(bound, set())
        if x.dtype == "bool" or (x.dtype == "int32" and target == "int32"):
            return typed_ops.convert(x, target)
        if target == "bool":
            if x.dtype == "int32":
                return typed_ops.binary("gt", x, 0, "bool")
            return ownership.tidy.run(lambda: typed_ops.binary(
                "or", typed_ops.binary("gt", x, 0.0, "bool"), typed_ops.unary("isnan", x, "bool"),
                "bool"))
        if target == "int32":
            return typed_ops.convert(x, "int32")           # saturating, NaN -> 0, as XLA

        def clip():
            clipped = x
            for test, limit in (("isposinf", self.FLOAT_MAX), ("isneginf", -self.FLOAT_MAX)):
                clipped = typed_ops.where(typed_ops.unary(test, clipped, "bool"), limit, clipped,
                                          "float32")
            return clipped
        return ownership.tidy.run(clip)


refuse_ops({
    "Scatter": "its output has a fixed shape with no batch dimension, filled from the indices "
               "and values of every sample in the batch, " + _BATCH_MIXED,
    "ScatterUpdate": "its indices address the whole tensor, batch dimension included, "
                     + _BATCH_MIXED,
    "SegmentSum": _SEGMENTS, "SegmentMax": _SEGMENTS, "SegmentMin": _SEGMENTS,
    "SegmentProd": _SEGMENTS, "SegmentReduction": _SEGMENTS,
    "Cond": _CALLABLE, "Switch": _CALLABLE, "WhileLoop": _CALLABLE, "ForiLoop": _CALLABLE,
    "Scan": _CALLABLE, "AssociativeScan": _CALLABLE, "Map": _CALLABLE,
    "VectorizedMap": _CALLABLE, "JVP": _CALLABLE,
})
