"""keras.ops that write into tensors by index: slice_update of a per-sample region (start 0 on the
batch axis, updates with the batch's size) runs; scatter, scatter_update, the segment reductions
(which address the batch dimension itself), and the control-flow operations that call Python
functions are refused at load, each with why.
"""
from __future__ import annotations

import numpy as np

from ..ops import index_map, typed as typed_ops
from .op_nodes import OpNode, _shape, register_op
from .refusals import refuse_ops

_BATCH_MIXED = ("so its answer would depend on how predict splits the batch")
_CALLABLE = ("it calls a Python function of the model's code (Keras saves it as a pickled "
             "lambda or not at all), which kerasgl never runs")
_SEGMENTS = ("its segment ids select rows along axis 0, the batch dimension, so a segment "
             "mixes samples and its answer would depend on how predict splits the batch")

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
    shaders = ("index_map.comp", "where.comp")

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
        placed = index_map.pad_constant(updates, [(a, n - a - u) for a, n, u in
                                                  zip(start, x.shape, updates.shape)])
        try:
            return typed_ops.where(self.mask(x.shape[1:], start[1:], updates.shape[1:]), placed,
                                   x, x.dtype)
        finally:
            placed.dispose()
