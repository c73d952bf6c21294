"""keras.ops.numpy (keras/src/ops/numpy.py) operations that join, cut or repeat whole blocks, as
recorded in Keras 3 graphs: concatenate, stack, split, tile, repeat and constant pad. They run
as concatenations (ops/merge.py), strided windows (ops/slicing.py) or per-axis index maps
(ops/tile_repeat_pad.py), all copies, and reshapes (views); float32 and int32 tensors alike.
"""
from __future__ import annotations

import math

from ...layers.typed_shapes import promote
from ...ops import layout, merge, tile_repeat_pad
from ...ops import typed as typed_ops
from ...ops.slicing import strided_slice
from ...tensors import ownership
from ..node import OpNode, _shape, register_op


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
        return ownership.tidy.run(lambda: merge.concatenate(
            [layout.reshape(x, x.shape[:axis] + (1,) + x.shape[axis:]) for x in xs], axis))


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
    shaders = ("tile_repeat_pad.comp",)
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
        return ownership.tidy.run(lambda: tile_repeat_pad.tile(layout.reshape(x, shape), reps))


@register_op("Repeat")
class RepeatOp(OpNode):
    """numpy.repeat with one count for every element (axis None: of the flattened input)."""
    params = ("x", "repeats", "axis")
    shaders = ("tile_repeat_pad.comp",)
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
            return tile_repeat_pad.repeat(x, repeats, axis)
        return ownership.tidy.run(
            lambda: tile_repeat_pad.repeat(layout.reshape(x, (x.size,)), repeats, 0))


@register_op("Pad")
class PadOp(OpNode):
    """numpy.pad in "constant" mode: pad_width an int, one (before, after) pair for every axis,
    or one pair per axis; other modes are refused at load."""
    params = ("x", "pad_width", "mode", "constant_values")
    shaders = ("tile_repeat_pad.comp",)
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
        return tile_repeat_pad.pad_constant(x, self.pads(bound, x.ndim), self.value(bound))


@register_op("Concatenate")
class ConcatenateOp(OpNode):
    """float32 tensors, and bool ones (masks) as Keras types them: all bool -> bool, with float32
    -> float32 (the bools as 0.0 / 1.0). int32 is refused at load."""
    input_dtypes = ("float32", "bool")
    params = ("xs", "axis")
    shaders = ("concat.comp", "typed_unary.comp")

    def result_dtype(self, bound, dtypes):
        super().result_dtype(bound, set(dtypes))
        return promote(*dtypes) if dtypes else "float32"

    def output_shape(self, bound):
        shapes = [_shape(x) for x in bound["xs"]]
        rank = len(shapes[0])
        axis = int(self.opt(bound, "axis", 0))
        if not -rank <= axis < rank or any(len(s) != rank for s in shapes):
            raise self.shape_error(f"cannot concatenate shapes {[list(s) for s in shapes]} "
                                   f"along axis {axis}.")
        axis %= rank
        sizes = [s[axis] for s in shapes]
        out = list(shapes[0])
        out[axis] = None if None in sizes else sum(sizes)
        for d in range(rank):
            if d != axis:
                known = {s[d] for s in shapes if s[d] is not None}
                if len(known) > 1:
                    raise self.shape_error(f"cannot concatenate shapes "
                                           f"{[list(s) for s in shapes]} along axis {axis}.")
                out[d] = known.pop() if known else None
        return tuple(out)

    def run(self, bound):
        xs = list(bound["xs"])
        dtype = promote(*(x.dtype for x in xs))
        axis = int(self.opt(bound, "axis", 0))

        def compute():
            joined = merge.concatenate([typed_ops.as_float(x)[0] for x in xs], axis)
            return joined if dtype == "float32" else typed_ops.convert(joined, dtype)
        return ownership.tidy.run(compute)
