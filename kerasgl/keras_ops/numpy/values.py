"""keras.ops that pick values by index, copy, or make values, recorded in Keras 3 graphs: take and
take_along_axis (constant indices through an index map, tensor indices through shaders/take.comp),
trace, ravel, copy / stop_gradient / real / conj (identities on real tensors), imag (zeros),
full / full_like, view (float32 <-> int32 words) and select (a chain of where over bool
conditions); and the refusals of the family.

Out-of-range indices give what Keras on JAX gives (jnp.take's "fill" mode): NaN for float32,
INT_MIN for int32; negative indices in [-n, -1] count from the end.
"""
from __future__ import annotations

import math

import numpy as np

from ...layers.refusals import refuse_ops
from ...layers.typed_shapes import dtype_of, promote
from ...ops import creation, layout, reduce
from ...ops import typed as typed_ops
from ...ops import word_gather
from ...ops.creation import fill as fill_tensor
from ...tensors import ownership
from ...tensors.tensor import Tensor, retag
from ..node import OpNode, Symbolic, _shape, broadcast_dims, checked_operand, register_op
from .rearranging import ACROSS_BATCH, IndexMapOp
from .shapes import _ReshapingOp


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _positions(indices, size: int):
    """Constant indices as positions along an axis of `size`: negative ones counted from the end,
    any other out of range -1 (the fill)."""
    indices = np.asarray(indices)
    if indices.dtype.kind not in "iu":
        raise ValueError(f"indices of dtype {indices.dtype} (integers only)")
    wrapped = np.where(indices < 0, indices + size, indices)
    return np.where((wrapped >= 0) & (wrapped < size), wrapped, -1)


def _take_positions(x, indices, axis):
    """jnp.take over a position array x with constant indices (out of range: -1)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis %= x.ndim
    picked = _positions(indices, x.shape[axis])
    out = np.take(x, np.maximum(picked, 0), axis)
    mask = (picked < 0).reshape((1,) * axis + picked.shape + (1,) * (x.ndim - axis - 1))
    return np.where(mask, -1, out)


class _TakeBase(IndexMapOp):
    """take / take_along_axis: constant indices (numpy arrays or integers) are a map made at
    load; indices in an int32 tensor are read by the GPU (shaders/take.comp)."""
    params = ("x", "indices", "axis")
    keeps_dtype = False
    shaders = ("word_gather.comp", "take.comp")

    def fill_value(self, bound, dtype):
        return {"float32": np.nan, "bool": 1}.get(dtype, np.iinfo(np.int32).min)

    def tensor_indices(self, bound) -> bool:
        indices = bound.get("indices")
        if isinstance(indices, (Symbolic, Tensor)):
            return True
        if not (_is_int(indices) or isinstance(indices, (np.ndarray, list))):
            raise self.unsupported(f"indices {indices!r}")
        return False

    def result_dtype(self, bound, dtypes):
        x = bound["x"]
        if not isinstance(x, Symbolic):
            raise self.unsupported("a constant that is not a float array as the source")
        dtype = dtype_of(x.shape)
        if self.tensor_indices(bound) and dtype_of(bound["indices"].shape) != "int32":
            raise self.unsupported(f"{dtype_of(bound['indices'].shape)} indices (int32 only)")
        return dtype

    def output_shape(self, bound):
        if self.tensor_indices(bound):
            return self.tensor_output_shape(bound)
        return super().output_shape(bound)

    def batch_rules(self, x_shape, idx_shape, axis):
        x_batched = bool(x_shape) and x_shape[0] is None
        idx_batched = bool(idx_shape) and idx_shape[0] is None
        if axis is None:       # x flattened; the output has the indices' shape
            ok = not x_batched
        else:
            ok = not (x_batched and (idx_batched or axis % len(x_shape) == 0)) \
                and not (idx_batched and axis % len(x_shape) != 0)
        if self.class_name == "TakeAlongAxis":
            ok = axis is not None and (not x_batched or axis % len(x_shape) != 0)
        if not ok:
            raise self.unsupported(ACROSS_BATCH)

    def axis(self, bound, rank):
        axis = self.opt(bound, "axis")
        if axis is not None and not (_is_int(axis) and -rank <= axis < rank):
            raise self.shape_error(f"axis {axis!r} is out of range for rank {rank}.")
        return axis


@register_op("Take")
class TakeOp(_TakeBase):
    def mapping(self, bound):
        return _take_positions(bound["x"], bound["indices"], self.opt(bound, "axis"))

    def tensor_output_shape(self, bound):
        x, idx = _shape(bound["x"]), _shape(bound["indices"])
        axis = self.axis(bound, len(x))
        self.batch_rules(x, idx, axis)
        if axis is None:
            return tuple(idx)
        axis %= len(x)
        return x[:axis] + tuple(idx) + x[axis + 1:]

    def run(self, bound):
        if not self.tensor_indices(bound):
            return super().run(bound)
        x, axis = bound["x"], self.opt(bound, "axis")
        if axis is not None:
            return word_gather.take(x, bound["indices"], axis)
        return ownership.tidy.run(
            lambda: word_gather.take(layout.reshape(x, (x.size,)), bound["indices"], 0))


@register_op("TakeAlongAxis")
class TakeAlongAxisOp(_TakeBase):
    """Indices with the input's shape but along `axis` (broadcasting is refused at load)."""

    def mapping(self, bound):
        x, axis = bound["x"], self.opt(bound, "axis")
        if axis is None:
            x, axis = x.reshape(-1), 0
        indices = np.asarray(bound["indices"])
        picked = _positions(indices, x.shape[axis])
        out = np.take_along_axis(x, np.broadcast_to(np.maximum(picked, 0), x.shape[:axis]
                                                     + picked.shape[axis:axis + 1]
                                                     + x.shape[axis + 1:]), axis)
        return np.where(np.broadcast_to(picked < 0, out.shape), -1, out)

    def tensor_output_shape(self, bound):
        x, idx = _shape(bound["x"]), _shape(bound["indices"])
        axis = self.axis(bound, len(x))
        self.batch_rules(x, idx, axis)
        if axis is None or len(idx) != len(x):
            raise self.unsupported("indices that do not have the input's rank (or axis=None)")
        axis %= len(x)
        for d, (m, n) in enumerate(zip(x, idx)):
            if d != axis and m != n:
                raise self.unsupported(f"indices of shape {list(idx)} broadcast against an input "
                                       f"of shape {list(x)} (only the same shape off the axis)")
        return x[:axis] + (idx[axis],) + x[axis + 1:]

    def run(self, bound):
        if not self.tensor_indices(bound):
            return super().run(bound)
        return word_gather.take(bound["x"], bound["indices"], self.opt(bound, "axis"), along=True)


@register_op("Trace")
class TraceOp(IndexMapOp):
    """The sum of a diagonal: the diagonal's words picked through a map, then summed (float32)."""
    params = ("x", "offset", "axis1", "axis2")
    input_dtypes = ("float32",)
    shaders = ("word_gather.comp", "reduce.comp")

    def mapping(self, bound):
        axes = int(self.opt(bound, "axis1", 0)), int(self.opt(bound, "axis2", 1))
        return np.diagonal(bound["x"], int(self.opt(bound, "offset", 0)), *axes).copy()

    def output_shape(self, bound):
        return super().output_shape(bound)[:-1]

    def run(self, bound):
        def compute():
            diagonal = IndexMapOp.run(self, bound)
            if diagonal.shape[-1] == 0:
                return fill_tensor(diagonal.shape[:-1], 0.0)
            return reduce.reduce("sum", diagonal, -1, False)
        return ownership.tidy.run(compute)


@register_op("Imag")
class ImagOp(IndexMapOp):
    """The imaginary part of a real tensor: zeros of its shape and dtype."""

    def mapping(self, bound):
        return np.full(bound["x"].shape, -1)


@register_op("FullLike")
class FullLikeOp(IndexMapOp):
    """full_like(x, fill_value): a number, or a tensor of x's dtype broadcast to x's shape; a
    dtype argument other than x's own is refused at load."""
    params = ("x", "fill_value", "dtype")
    data_params = ("x", "fill_value")

    def result_dtype(self, bound, dtypes):
        dtype = super().result_dtype(bound, dtypes)
        wanted = bound.get("dtype", (self.config or {}).get("dtype"))
        if wanted not in (None, dtype):
            raise self.unsupported(f"dtype={wanted!r} for a {dtype} input")
        return dtype

    def check_constant(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.unsupported(f"fill_value={value!r} (a number or a tensor)")

    def fill_value(self, bound, dtype):
        value = bound.get("fill_value")
        return value if isinstance(value, (int, float)) else 0

    def mapping(self, bound):
        x, value = bound["x"], bound.get("fill_value")
        if isinstance(value, np.ndarray):
            return np.broadcast_to(value, x.shape).copy()
        return np.full(x.shape, -1)


@register_op("Full")
class FullOp(IndexMapOp):
    """full(shape, fill_value) with fill_value a float32 tensor, broadcast to `shape`."""
    params = ("fill_value", "shape", "dtype")
    data_params = ("fill_value",)
    input_dtypes = ("float32",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if (self.config or {}).get("dtype") not in (None, "float32"):
            raise self.unsupported(f"dtype={self.config.get('dtype')!r}")

    def mapping(self, bound):
        return np.broadcast_to(bound["fill_value"], tuple(self.opt(bound, "shape"))).copy()


@register_op("View")
class ViewOp(IndexMapOp):
    """view(x, dtype) between float32 and int32: the same words read as the other dtype."""
    params = ("x", "dtype")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.target = (self.config or {}).get("dtype")
        if self.target not in (None, "float32", "int32"):
            raise self.unsupported(f"a view as {self.target!r} (float32 and int32 words only)")

    def word_dtype(self, dtype):
        if dtype == "bool":
            raise self.unsupported("a view of a bool tensor (Keras's bools are bytes)")
        return self.target or dtype

    def mapping(self, bound):
        return bound["x"].copy()


@register_op("Copy", "StopGradient", "Real", "Conj", "Conjugate")
class CopyOp(OpNode):
    """Identities at inference on real tensors: a copy."""
    params = ("x",)
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def bind(self, args, kwargs):
        if self.class_name == "StopGradient" and "variable" in kwargs:
            kwargs = {"x" if k == "variable" else k: v for k, v in kwargs.items()}
        return super().bind(args, kwargs)

    def run(self, bound):
        return layout.copy(bound["x"])


@register_op("Ravel")
class RavelOp(_ReshapingOp):
    """The input flattened in C order: a view. Flattening the batch with the rest keeps every
    sample's words in order, so Keras's predict and this one agree however the batch is split."""
    params = ("x",)

    def new_shape(self, shape, bound):
        return (None if None in shape else math.prod(shape),)

    def run(self, bound):
        x = bound["x"]
        return layout.reshape(x, (x.size,))


@register_op("Select")
class SelectOp(OpNode):
    """select(condlist, choicelist, default): per element the choice of the first true condition,
    else default; run as a chain of where from the last condition to the first."""
    params = ("condlist", "choicelist", "default")
    shaders = ("where.comp", "typed_unary.comp")

    def lists(self, bound):
        conds, choices = bound.get("condlist"), bound.get("choicelist")
        if not isinstance(conds, (list, tuple)) or not isinstance(choices, (list, tuple)) \
                or len(conds) != len(choices) or not conds:
            raise self.shape_error("condlist and choicelist must be lists of one length.")
        return list(conds), list(choices), bound.get("default", 0)

    def result_dtype(self, bound, dtypes):
        conds, choices, default = self.lists(bound)
        for cond in conds:
            what = f"a {dtype_of(cond.shape)} tensor" if isinstance(cond, Symbolic) else repr(cond)
            if not isinstance(cond, Symbolic) or dtype_of(cond.shape) != "bool":
                raise self.unsupported(f"the condition {what} (bool tensors only)")
        return promote(*[checked_operand(self, c, "choicelist") for c in choices],
                       checked_operand(self, default, "default"))

    def output_shape(self, bound):
        conds, choices, default = self.lists(bound)
        shape, where = _shape(default), f"Layer '{self.name}'"
        for value in conds + choices:
            shape = broadcast_dims(shape, _shape(value), where)
        return shape

    def run(self, bound):
        conds, choices, default = self.lists(bound)
        dtype = promote(*[typed_ops.dtype_of_operand(v) for v in choices + [default]])

        def compute():
            result = default
            for cond, choice in reversed(list(zip(conds, choices))):
                result = typed_ops.where(cond, choice, result, dtype)
            return result
        return ownership.tidy.run(compute)


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
        return ownership.tidy.run(lambda: retag(creation.fill(x.shape, value, "int32"), "bool"))


refuse_ops({
    "EmptyLike": "its values are unspecified (an uninitialised tensor in Keras)",
    "Arange": "its output's shape depends on its arguments' values, which a GPU plan cannot have",
    "Size": "its result counts the samples of the batch, so it depends on how predict splits "
            "the batch, and Keras's own predict cannot return it (a 0-d result per batch)",
    "Ndim": "Keras records it with a shape its value does not have ((rank,) for a 0-d result), "
            "and Keras's own predict cannot return it",
})
