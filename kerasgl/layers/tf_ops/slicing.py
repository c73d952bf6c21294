"""Basic indexing as TensorFlow records it: `x[...]` (SlicingOpLambda "__operators__.getitem",
its slice_spec), tf.strided_slice (begin / end / strides and the five masks) and tf.slice
(begin / size). Each becomes numpy's basic index (ints, slices, None for a new axis, one
Ellipsis), which is what TensorFlow's strided slice computes, run by ops/basic_index.py.

tf.keras saves a slice_spec entry as {"start", "stop", "step"} (a slice), {"class_name":
"__ellipsis__"}, null (tf.newaxis), an int, or a tensor; a bound may be a tensor too
(`x[:, :tf.shape(x)[1] // 2]`): tensors must have values known at load.
"""
from __future__ import annotations

from ...errors import ShapeError
from ...ops import basic_index
from .arguments import is_tensor
from .functions import TFFunction, register
from .values import Sym


def _int(function, value, what: str):
    """A slice bound or index: an int, or a scalar tensor whose value load knows."""
    if isinstance(value, Sym):
        if value.value is None or value.value.size != 1 or value.dtype != "int32" \
                or not basic_index.is_int(value.value.ravel()[0]):
            raise function.unsupported(f"the {what} {value} (a tensor whose value is known only "
                                       "when the model runs)")
        return int(value.value.ravel()[0])
    if value is None or basic_index.is_int(value):
        return value
    raise function.unsupported(f"the {what} {value!r}")


def _spec_item(function, entry):
    if isinstance(entry, dict) and entry.get("class_name") == "__ellipsis__":
        return Ellipsis
    if isinstance(entry, dict) and set(entry) <= {"start", "stop", "step"}:
        bounds = [_int(function, entry.get(k), "slice bound") for k in ("start", "stop", "step")]
        if bounds[2] == 0:
            raise function.shape_error("slice step cannot be zero.")
        return slice(*bounds)
    if entry is None:
        return None
    index = _int(function, entry, "index")
    if index is None:
        raise function.unsupported(f"the index {entry!r}")
    return index


class Indexing(TFFunction):
    """The shared part: `items(args)` gives the basic index; plan resolves it against the
    input's shape, run takes the window."""
    shaders = ("strided_slice.comp",)

    def items(self, args) -> list:
        raise NotImplementedError

    def plan(self, args):
        x = args.tensor(self.params[0])
        self.out_dtype = x.dtype
        try:
            self.index = basic_index.expand(self.items(args), x.ndim)
            return basic_index.resolve(self.index, x.shape)[1]
        except ShapeError as exc:
            raise self.shape_error(str(exc)) from None

    def value(self, args):
        x = args.values[self.params[0]]
        return None if x.value is None else x.value[tuple(self.index)]

    def run(self, args):
        return basic_index.take(args.tensor(self.params[0]), self.index)


class GetItem(Indexing):
    params = ("tensor", "slice_spec", "var")

    def items(self, args) -> list:
        spec = args.values.get("slice_spec")
        if args.get("var") is not None:
            raise self.unsupported("var")
        if is_tensor(spec) and spec.dtype == "bool":
            raise self.unsupported("a boolean mask (its result's size depends on the values)")
        entries = spec if isinstance(spec, list) else [spec]
        return [_spec_item(self, entry) for entry in entries]


register(GetItem, ["__operators__.getitem"])


class StridedSlice(Indexing):
    params = ("input_", "begin", "end", "strides", "begin_mask", "end_mask", "ellipsis_mask",
              "new_axis_mask", "shrink_axis_mask", "var", "name")

    def items(self, args) -> list:
        begin, end = args.static("begin"), args.static("end")
        strides = args.static("strides", None) or [1] * len(begin)
        if not (len(begin) == len(end) == len(strides)):
            raise self.shape_error(f"begin {begin}, end {end} and strides {strides} differ in "
                                   "length.")
        masks = {m: int(args.static(m, 0)) for m in self.params[4:9]}
        items = []
        for i, (b, e, s) in enumerate(zip(begin, end, strides)):
            bit = 1 << i
            if masks["ellipsis_mask"] & bit:
                items.append(Ellipsis)
            elif masks["new_axis_mask"] & bit:
                items.append(None)
            elif masks["shrink_axis_mask"] & bit:
                items.append(int(b))
            else:
                if s == 0:
                    raise self.shape_error("a stride of 0.")
                items.append(slice(None if masks["begin_mask"] & bit else int(b),
                                   None if masks["end_mask"] & bit else int(e), int(s)))
        return items


register(StridedSlice, ["strided_slice"])


class Slice(Indexing):
    """tf.slice(input_, begin, size): size -1 reaches the end of its axis."""
    params = ("input_", "begin", "size")

    def items(self, args) -> list:
        begin, size = args.static("begin"), args.static("size")
        if len(begin) != len(size) or any(b < 0 or s < -1 for b, s in zip(begin, size)):
            raise self.shape_error(f"begin {begin} and size {size} do not make a window.")
        return [slice(b, None if s == -1 else b + s) for b, s in zip(begin, size)]


register(Slice, ["slice"])
