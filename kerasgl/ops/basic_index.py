"""numpy's basic indexing (`x[1:3, ..., None, -1]`) resolved against a shape and run as a strided
window (slicing.py, a copy) and a reshape (a view); float32, int32 and bool tensors alike.

An index is a list of items, one per indexed axis: an int (the axis goes), a slice, None (a new
axis of size 1) or one Ellipsis (as many whole axes as the rank leaves). Shapes may hold None
(a size known only when the model runs): the window of such an axis is None until then.
Keras 3's GetItem (keras_ops/numpy/getitem.py) and tf.keras's getitem / strided_slice layers
(layers/tf_ops/slicing.py) both index through here.
"""
from __future__ import annotations

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor
from . import layout
from .slicing import strided_slice


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def expand(items, rank: int) -> list:
    """`items` with the Ellipsis spelled out as whole-axis slices, and whole-axis slices added for
    the axes the index does not reach: one item per input axis, plus the None items."""
    items = list(items)
    if sum(item is Ellipsis for item in items) > 1:
        raise ShapeError("an index can only have a single ellipsis ('...').")
    consumed = sum(item is not None and item is not Ellipsis for item in items)
    if consumed > rank:
        raise ShapeError(f"too many indices ({consumed}) for a tensor of rank {rank}.")
    fill = [slice(None)] * (rank - consumed)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        return items[:at] + fill + items[at + 1:]
    return items + fill


def resolve(items, shape):
    """(window per input axis: (start, size, step), or None where the size is unknown; the
    output shape) of expanded `items` over `shape`."""
    window, out, axis = [], [], 0
    for item in items:
        if item is None:
            out.append(1)
            continue
        dim = shape[axis]
        axis += 1
        if is_int(item):
            if dim is not None and not -dim <= item < dim:
                raise ShapeError(f"index {item} is out of bounds for axis {axis - 1} with size "
                                 f"{dim} (shape {list(shape)}).")
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


def take(x: Tensor, items) -> Tensor:
    """x[items] (expanded items, every size known): a new tensor."""
    window, out_shape = resolve(items, x.shape)
    return ownership.tidy.run(lambda: layout.reshape(strided_slice(x, window), out_shape))
