"""keras.ops indexing recorded in Keras 3 graphs: basic slicing (`x[:, 1:3]`, `x[..., -1]`,
`x[:, None]`: Keras's GetItem), keras.ops.slice, stack, split, tile, repeat and constant pad. They
run as strided windows (ops/slicing.py) or index maps (ops/index_map.py), both copies, and
reshapes (views); float32 and int32 tensors alike.

Indices must be Python integers, slices of them, None or Ellipsis: an index that is a tensor
(gathering) is refused at load.
"""
from __future__ import annotations

import math

from ..ops import index_map, layout, merge
from ..ops.slicing import strided_slice
from ..tensors import ownership
from .op_nodes import OpNode, Symbolic, _shape, register_op


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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


@register_op("Stack")
class StackOp(OpNode):
    params = ("x", "axis")
    shaders = ("concat.comp",)
    input_dtypes = ("float32",)

    def position(self, bound, rank):
        axis = int(self.opt(bound, "axis", 0))
        if not -(rank + 1) <= axis <= rank:
            raise self.shape_error(f"axis {axis} is out of range for stacking rank-{rank} tensors.")
        return axis % (rank + 1)

    def output_shape(self, bound):
        shapes = [_shape(x) for x in bound["x"]]
        if not shapes or any(len(s) != len(shapes[0]) for s in shapes):
            raise self.shape_error(f"cannot stack shapes {[list(s) for s in shapes]}.")
        out = []
        for dims in zip(*shapes):
            known = {d for d in dims if d is not None}
            if len(known) > 1:
                raise self.shape_error(f"cannot stack shapes {[list(s) for s in shapes]}.")
            out.append(known.pop() if known else None)
        axis = self.position(bound, len(out))
        return tuple(out[:axis]) + (len(shapes),) + tuple(out[axis:])

    def run(self, bound):
        xs = list(bound["x"])
        axis = self.position(bound, xs[0].ndim)
        views = [layout.reshape(x, x.shape[:axis] + (1,) + x.shape[axis:]) for x in xs]
        try:
            return merge.concatenate(views, axis)
        finally:
            ownership.dispose(views)


@register_op("Split")
class SplitOp(OpNode):
    """keras.ops.split into equal sections or at indices: one output per piece."""
    params = ("x", "indices_or_sections", "axis")
    shaders = ("strided_slice.comp",)
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def bounds(self, bound, dim):
        pieces = self.opt(bound, "indices_or_sections")
        if _is_int(pieces):
            if dim is None:
                raise self.unsupported("splitting an axis of unknown size into sections")
            if pieces <= 0 or dim % pieces:
                raise self.shape_error(f"an axis of size {dim} cannot be split into {pieces} "
                                       "equal sections.")
            cuts = [dim // pieces * k for k in range(1, pieces)]
        elif isinstance(pieces, list) and all(_is_int(v) for v in pieces):
            if dim is None:
                raise self.unsupported("splitting an axis of unknown size")
            cuts = list(pieces)
        else:
            raise self.unsupported(f"indices_or_sections={pieces!r}")
        edges = [0] + cuts + [dim]
        return [slice(a, b).indices(dim)[:2] for a, b in zip(edges, edges[1:])]

    def axis(self, bound, rank):
        axis = int(self.opt(bound, "axis", 0))
        if not -rank <= axis < rank:
            raise self.shape_error(f"axis {axis} is out of range for rank {rank}.")
        return axis % rank

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        axis = self.axis(bound, len(shape))
        return [shape[:axis] + (max(stop - start, 0),) + shape[axis + 1:]
                for start, stop in self.bounds(bound, shape[axis])]

    def run(self, bound):
        x = bound["x"]
        axis = self.axis(bound, x.ndim)
        outs = []
        for start, stop in self.bounds(bound, x.shape[axis]):
            size = max(stop - start, 0)
            window = [(0, n, 1) for n in x.shape]
            window[axis] = (start if size else 0, size, 1)
            outs.append(strided_slice(x, window))
        return outs


def _int_list(value):
    values = [value] if _is_int(value) else value
    if not isinstance(values, list) or not all(_is_int(v) for v in values):
        return None
    return values


@register_op("Tile")
class TileOp(OpNode):
    """numpy.tile: repetitions per axis, shorter lists counting from the last axis, longer ones
    adding leading axes."""
    params = ("x", "repeats")
    shaders = ("index_map.comp",)
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def plan(self, bound, shape):
        reps = _int_list(self.opt(bound, "repeats"))
        if reps is None or min(reps, default=1) < 0:
            raise self.unsupported(f"repeats={self.opt(bound, 'repeats')!r} (non-negative integers)")
        rank = max(len(reps), len(shape))
        return (1,) * (rank - len(shape)) + tuple(shape), [1] * (rank - len(reps)) + reps

    def output_shape(self, bound):
        shape, reps = self.plan(bound, _shape(bound["x"]))
        return tuple(None if n is None else n * r for n, r in zip(shape, reps))

    def run(self, bound):
        x = bound["x"]
        shape, reps = self.plan(bound, x.shape)
        source = layout.reshape(x, shape)
        try:
            return index_map.tile(source, reps)
        finally:
            source.dispose()


@register_op("Repeat")
class RepeatOp(OpNode):
    """numpy.repeat with one count for every element (axis None: of the flattened input)."""
    params = ("x", "repeats", "axis")
    shaders = ("index_map.comp",)
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def count(self, bound):
        repeats = self.opt(bound, "repeats")
        if not _is_int(repeats) or repeats < 0:
            raise self.unsupported(f"repeats={repeats!r} (one non-negative integer)")
        return repeats

    def output_shape(self, bound):
        shape, repeats, axis = _shape(bound["x"]), self.count(bound), self.opt(bound, "axis")
        if axis is None:
            return (None if None in shape else math.prod(shape) * repeats,)
        if not -len(shape) <= axis < len(shape):
            raise self.shape_error(f"axis {axis} is out of range for rank {len(shape)}.")
        axis %= len(shape)
        return tuple((None if n is None else n * repeats) if d == axis else n
                     for d, n in enumerate(shape))

    def run(self, bound):
        x, repeats, axis = bound["x"], self.count(bound), self.opt(bound, "axis")
        if axis is not None:
            return index_map.repeat(x, repeats, axis)
        flat = layout.reshape(x, (x.size,))
        try:
            return index_map.repeat(flat, repeats, 0)
        finally:
            flat.dispose()


@register_op("Pad")
class PadOp(OpNode):
    """numpy.pad in "constant" mode: pad_width an int, one (before, after) pair for every axis,
    or one pair per axis; other modes are refused at load."""
    params = ("x", "pad_width", "mode", "constant_values")
    shaders = ("index_map.comp",)
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if self.options.get("mode", "constant") != "constant":
            raise self.unsupported(f"mode={self.options.get('mode')!r}")

    def pads(self, bound, rank):
        if self.opt(bound, "mode", "constant") != "constant":
            raise self.unsupported(f"mode={self.opt(bound, 'mode')!r}")
        width = self.opt(bound, "pad_width")
        if _is_int(width):
            pairs = [[width, width]] * rank
        elif isinstance(width, list) and len(width) == 2 and all(_is_int(v) for v in width):
            pairs = [width] * rank
        elif isinstance(width, list) and all(_int_list(p) is not None and len(p) in (1, 2)
                                             for p in width) and len(width) in (1, rank):
            pairs = [p * 2 if len(p) == 1 else p for p in width] * (rank if len(width) == 1 else 1)
        else:
            raise self.unsupported(f"pad_width={width!r}")
        if len(pairs) != rank or any(v < 0 for p in pairs for v in p):
            raise self.shape_error(f"pad_width={width!r} does not fit a rank-{rank} input.")
        return pairs

    def value(self, bound):
        value = self.opt(bound, "constant_values")
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.unsupported(f"constant_values={value!r} (one number)")
        return value

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        pads = self.pads(bound, len(shape))
        self.value(bound)
        return tuple(None if n is None else n + a + b for n, (a, b) in zip(shape, pads))

    def run(self, bound):
        x = bound["x"]
        return index_map.pad_constant(x, self.pads(bound, x.ndim), self.value(bound))
