"""keras.ops.numpy's GetItem (keras/src/ops/numpy.py): basic indexing recorded in Keras 3 graphs
(`x[:, 1:3]`, `x[..., -1]`, `x[:, None]`), run as a strided window (ops/slicing.py, a copy) and a
reshape (a view); float32, int32 and bool tensors alike.

Indices must be Python integers, slices of them, None or Ellipsis: an index that is a tensor
(gathering) is refused at load.
"""
from __future__ import annotations

from ...errors import ShapeError
from ...ops import basic_index
from ..node import OpNode, Symbolic, _shape, register_op
from .joining import _is_int


def _slice_part(value) -> bool:
    return value is None or _is_int(value)


class _Key:
    """A basic index, checked for this node: per input axis an int or a slice, and where the
    output gets new axes (None); ops/basic_index.py resolves it against a shape."""

    def __init__(self, node: OpNode, key, rank: int):
        items = list(key) if isinstance(key, list) else [key]
        for item in items:
            if isinstance(item, slice):
                if not all(_slice_part(v) for v in (item.start, item.stop, item.step)):
                    raise node.unsupported(f"the slice {item!r} (bounds that are not integers)")
                if item.step == 0:
                    raise node.shape_error("slice step cannot be zero.")
            elif not (item is None or item is Ellipsis or _is_int(item)):
                what = "a tensor" if isinstance(item, Symbolic) else repr(item)
                raise node.unsupported(f"indexing with {what} (only integers, slices, None and "
                                       "Ellipsis)")
        self.node = node
        self.items = self.checked(basic_index.expand, items, rank)

    def checked(self, fn, *args):
        try:
            return fn(*args)
        except ShapeError as exc:
            raise self.node.shape_error(str(exc)) from None

    def resolve(self, shape):
        """(window per input axis: (start, size, step) or None where the size is unknown,
        the output shape)."""
        return self.checked(basic_index.resolve, self.items, shape)


@register_op("GetItem")
class GetItemOp(OpNode):
    params = ("x", "key")
    shaders = ("strided_slice.comp",)
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        return _Key(self, bound.get("key"), len(shape)).resolve(shape)[1]

    def run(self, bound):
        x = bound["x"]
        key = _Key(self, bound.get("key"), x.ndim)
        return key.checked(basic_index.take, x, key.items)
