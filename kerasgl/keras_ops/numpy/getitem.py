"""keras.ops.numpy's GetItem (keras/src/ops/numpy.py): basic indexing recorded in Keras 3 graphs
(`x[:, 1:3]`, `x[..., -1]`, `x[:, None]`), run as a strided window (ops/slicing.py, a copy) and a
reshape (a view); float32, int32 and bool tensors alike.

Indices must be Python integers, slices of them, None or Ellipsis: an index that is a tensor
(gathering) is refused at load.
"""
from __future__ import annotations


from ...ops import layout
from ...ops.slicing import strided_slice
from ..node import OpNode, Symbolic, _shape, register_op
from .joining import _is_int


def _slice_part(value) -> bool:
    return value is None or _is_int(value)


class _Key:
    """A basic index, resolved against a shape: per input axis an int or a slice, and where the
    output gets new axes (None)."""

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
        if sum(item is Ellipsis for item in items) > 1:
            raise node.shape_error("an index can only have a single ellipsis ('...').")
        consumed = sum(item is not None and item is not Ellipsis for item in items)
        if consumed > rank:
            raise node.shape_error(f"too many indices ({consumed}) for a tensor of rank {rank}.")
        fill = [slice(None)] * (rank - consumed)
        if Ellipsis in items:
            at = items.index(Ellipsis)
            items = items[:at] + fill + items[at + 1:]
        else:
            items = items + fill
        self.node, self.items = node, items

    def resolve(self, shape):
        """(window per input axis: (start, size, step) or None where the size is unknown,
        the output shape)."""
        window, out, axis = [], [], 0
        for item in self.items:
            if item is None:
                out.append(1)
                continue
            dim = shape[axis]
            axis += 1
            if _is_int(item):
                if dim is not None and not -dim <= item < dim:
                    raise self.node.shape_error(f"index {item} is out of bounds for axis "
                                                f"{axis - 1} with size {dim} (shape {list(shape)}).")
                window.append(None if dim is None else (item % dim, 1, 1))
                continue
            if dim is None:
                window.append(None)
                out.append(None)
                continue
            start, stop, step = item.indices(dim)
            size = len(range(start, stop, step))
            window.append((start if size else 0, size, step))
            out.append(size)
        return window, tuple(out)


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
        window, out_shape = _Key(self, bound.get("key"), x.ndim).resolve(x.shape)
        part = strided_slice(x, window)
        try:
            return layout.reshape(part, out_shape)
        finally:
            part.dispose()
