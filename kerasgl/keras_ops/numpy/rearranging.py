"""keras.ops that move or pick values without arithmetic, recorded in Keras 3 graphs: flip, roll,
rot90, swapaxes, moveaxis, broadcast_to, tril / triu, diagonal / diag / diagflat, the h/v/d stacks
and splits, array_split, unstack, append and meshgrid.

Each is numpy's own function run once on the host over *positions*: the inputs replaced by
np.arange of their sizes, the function's result says, per output word, which input word it holds
(-1: a fill value, such as tril's zeros). That map is uploaded once per input shape and one
dispatch copies the words (ops/word_gather.py), float32 and int32 alike.

When the inputs' first axis is the batch (unknown at load), the map is made for one sample and
serves every batch size. An operation whose result mixes samples (flipud, an axis=None roll, a
moveaxis of the batch axis) is refused at load: Keras's own predict runs it on each slice of the
batch it cuts, so its result depends on how the batch is cut. At load the function also runs on
stand-in sizes (the batch as 2 and 3, other unknown sizes as 5 and 7): shapes, errors and that
refusal come from numpy itself.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import UnsupportedLayerError
from ...ops import word_gather
from ...tensors import ownership
from ...tensors.tensor import Tensor, tensor
from ..node import OpNode, Symbolic, register_op

ACROSS_BATCH = ("an operation across the batch axis (its result would mix the samples of a "
                "batch, and depend on how predict splits the batch)")


_STAND_INS = ((2, 5), (3, 7))        # (batch size, any other unknown size) of the two trial runs


_MAX_CACHED_SHAPES = 16


def _tuple(value):
    """Config lists (JSON) as the tuples numpy wants for axes and shapes."""
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value


def _is_tensor(value) -> bool:
    return isinstance(value, (Symbolic, Tensor))


def _leaves(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _replaced(value, new):
    """`value` with its tensor leaves replaced, in order, from the iterator `new`."""
    if isinstance(value, (list, tuple)):
        return type(value)(_replaced(v, new) for v in value)
    return next(new) if _is_tensor(value) else value


def _shape_of(leaf) -> tuple:
    return tuple(leaf.shape)


class IndexMapOp(OpNode):
    """Base of the value-independent movements: `mapping(bound)` is the numpy function, called
    with the tensors of `data_params` replaced by position arrays; it returns an array (or a list,
    for several outputs) of positions, -1 where the output is `fill_value(bound, dtype)`."""
    data_params: tuple = ("x",)
    input_dtypes = ("float32", "int32")
    keeps_dtype = True
    shaders = ("word_gather.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self._batched = False
        self._maps: dict = {}

    # -- subclasses ------------------------------------------------------------------------------
    def mapping(self, bound):
        raise NotImplementedError

    def fill_value(self, bound, dtype: str):
        return 0

    def word_dtype(self, dtype: str) -> str:
        """The output's dtype for inputs of `dtype` (the same words: the same dtype)."""
        return dtype

    def result_dtype(self, bound, dtypes):
        return self.word_dtype(super().result_dtype(bound, dtypes))

    def check_constant(self, value) -> None:
        """A data operand that is not a tensor (float arrays are, as Constant nodes)."""
        raise self.unsupported(f"the operand {value!r} (tensors or float arrays only)")

    # -- positions -------------------------------------------------------------------------------
    def data_leaves(self, bound) -> list:
        leaves = [leaf for p in self.data_params if p in bound for leaf in _leaves(bound[p])]
        for leaf in leaves:
            if not _is_tensor(leaf):
                self.check_constant(leaf)
        leaves = [leaf for leaf in leaves if _is_tensor(leaf)]
        if not leaves:
            raise self.unsupported("a call without tensor operands")
        return leaves

    def evaluate(self, bound, shapes, batched: bool, rows: int):
        """The positions of the outputs (a list of int64 arrays, whether it was a list) for
        inputs of these shapes, the batch (first axis, `rows` samples) included, and the row width
        of the source."""
        widths = [math.prod(s[1:]) if batched else math.prod(s) for s in shapes]
        row = sum(widths)
        arrays, offset = [], 0
        for shape, width in zip(shapes, widths):
            if batched:
                a = np.arange(rows)[:, None] * row + offset + np.arange(width)[None, :]
            else:
                a = offset + np.arange(width)
            arrays.append(a.reshape(shape))
            offset += width
        new = iter(arrays)
        replaced = dict(bound)
        for p in self.data_params:
            if p in bound:
                replaced[p] = _replaced(bound[p], new)
        result = self.mapping(replaced)
        several = isinstance(result, (list, tuple))
        outs = [np.asarray(r) for r in (result if several else [result])]
        for out in outs:
            if out.dtype.kind not in "iu":
                raise TypeError(f"{type(self).__name__}.mapping gave {out.dtype} positions")
        return outs, several, row

    def output_shape(self, bound):
        shapes = [_shape_of(leaf) for leaf in self.data_leaves(bound)]
        batched = [len(s) > 0 and s[0] is None for s in shapes]
        if any(batched) and not all(batched):
            raise self.unsupported("tensors with and without a batch axis in one call")
        self._batched = batched = all(batched)
        unknown = any(d is None for s in shapes for d in s[1 if batched else 0:])
        trials = []
        for rows, size in (_STAND_INS if batched or unknown else ((1, 1),)):
            concrete = [tuple((rows if batched and axis == 0 else size) if d is None else d
                              for axis, d in enumerate(s)) for s in shapes]
            try:
                outs, several, row = self.evaluate(bound, concrete, batched, rows)
            except UnsupportedLayerError:
                raise
            except Exception as exc:      # numpy's own error for these shapes
                if not (batched or unknown):
                    raise self.shape_error(f"{exc} (input shapes {[list(s) for s in shapes]}).")
                sizes = (f"the batch as {rows} samples and other unknown sizes as {size}"
                         if batched else f"the unknown sizes as {size}")
                raise self.unsupported(f"this operation on inputs of shapes "
                                       f"{[list(s) for s in shapes]} whatever their unknown sizes "
                                       f"(numpy: {exc}, with {sizes})") from None
            if batched and not all(_per_sample(out, rows, row) for out in outs):
                raise self.unsupported(ACROSS_BATCH)
            trials.append((outs, several))
        (first, several), last = trials[0], trials[-1][0]
        if len(first) != len(last) or any(a.ndim != b.ndim for a, b in zip(first, last)):
            raise self.unsupported("a number or rank of outputs that depends on a size unknown "
                                   "at load")
        out_shapes = [tuple(m if m == n else None for m, n in zip(a.shape, b.shape))
                      for a, b in zip(first, last)]
        return out_shapes if several else out_shapes[0]

    # -- running -----------------------------------------------------------------------------------
    def _entry(self, bound, shapes, batched: bool):
        """(maps, output shapes, several): cached per shape up to _MAX_CACHED_SHAPES; past that,
        maps made for this call only (the caller's tidy scope frees them)."""
        key = (batched, tuple(s[1:] if batched else s for s in shapes))
        entry = self._maps.get(key)
        if entry is not None:
            return entry
        concrete = [(1,) + s[1:] for s in shapes] if batched else shapes
        outs, several, _ = self.evaluate(bound, concrete, batched, 1)
        keep = len(self._maps) < _MAX_CACHED_SHAPES
        maps = []
        for i, out in enumerate(outs):
            flat = np.ascontiguousarray(out.reshape(-1), dtype=np.int32)
            maps.append(self.upload(flat, dtype="int32", name=f"index_map{len(self._maps)}_{i}")
                        if keep else tensor(flat, dtype="int32", label=f"{self.name}/index_map"))
        entry = (maps, [out.shape[1:] if batched else out.shape for out in outs], several)
        if keep:
            self._maps[key] = entry
        return entry

    def run(self, bound):
        leaves = self.data_leaves(bound)
        shapes = [tuple(t.shape) for t in leaves]
        batched = self._batched and all(len(s) and s[0] == shapes[0][0] for s in shapes)
        rows = shapes[0][0] if batched else 1
        target = self.word_dtype(leaves[0].dtype)
        fill = word_gather.fill_bits(self.fill_value(bound, target), target)

        def compute():
            maps, out_shapes, several = self._entry(bound, shapes, batched)
            source = leaves[0] if len(leaves) == 1 else word_gather.side_by_side(leaves, rows)
            outs = [word_gather.gather_map(source, m, ((rows,) + tuple(s)) if batched else s,
                                            rows, fill, target)
                    for m, s in zip(maps, out_shapes)]
            return outs if several else outs[0]
        return ownership.tidy.run(compute)

    def dispose(self) -> None:
        self._maps.clear()
        super().dispose()


def _per_sample(out, rows: int, row: int) -> bool:
    """Whether positions `out`, for `rows` samples of `row` words side by side, read sample b's
    words alone into output sample b, the same way for every sample."""
    if out.ndim == 0 or out.shape[0] != rows:
        return False
    flat = out.reshape(rows, -1)
    base = flat[0]
    if ((base >= row) | (base < -1)).any():
        return False
    shifted = np.where(flat < 0, -1, flat - np.arange(rows)[:, None] * row)
    return bool((shifted == base[None, :]).all())


# -------------------------------------------------------------------------------------------------
# One input
# -------------------------------------------------------------------------------------------------
@register_op("Flip")
class FlipOp(IndexMapOp):
    params = ("x", "axis")

    def mapping(self, bound):
        return np.flip(bound["x"], _tuple(self.opt(bound, "axis")))


@register_op("Fliplr", "Flipud")
class FlipLrUdOp(IndexMapOp):
    def mapping(self, bound):
        return (np.fliplr if self.class_name == "Fliplr" else np.flipud)(bound["x"])


@register_op("Roll")
class RollOp(IndexMapOp):
    params = ("x", "shift", "axis")

    def mapping(self, bound):
        shift, axis = _tuple(self.opt(bound, "shift")), _tuple(self.opt(bound, "axis"))
        return np.roll(bound["x"], shift, axis)


@register_op("Rot90")
class Rot90Op(IndexMapOp):
    params = ("array", "k", "axes")
    data_params = ("array",)

    def mapping(self, bound):
        return np.rot90(bound["array"], int(self.opt(bound, "k", 1)),
                        _tuple(self.opt(bound, "axes", (0, 1))))


@register_op("Swapaxes")
class SwapaxesOp(IndexMapOp):
    params = ("x", "axis1", "axis2")

    def mapping(self, bound):
        return np.swapaxes(bound["x"], self.opt(bound, "axis1"), self.opt(bound, "axis2"))


@register_op("Moveaxis")
class MoveaxisOp(IndexMapOp):
    params = ("x", "source", "destination")

    def mapping(self, bound):
        return np.moveaxis(bound["x"], _tuple(self.opt(bound, "source")),
                           _tuple(self.opt(bound, "destination")))


@register_op("BroadcastTo")
class BroadcastToOp(IndexMapOp):
    params = ("x", "shape")

    def mapping(self, bound):
        return np.broadcast_to(bound["x"], _tuple(self.opt(bound, "shape"))).copy()


@register_op("Tril", "Triu")
class TriangleOp(IndexMapOp):
    """The lower / upper triangle of the last two axes (k: the diagonal), zeros elsewhere."""
    params = ("x", "k")

    def mapping(self, bound):
        x = bound["x"]
        if x.ndim < 2:
            raise ValueError("tril / triu need an input of rank 2 or more")
        triangle = np.tril if self.class_name == "Tril" else np.triu
        keep = triangle(np.ones(x.shape[-2:], bool), int(self.opt(bound, "k", 0)))
        return np.where(keep, x, -1)


@register_op("Diagonal")
class DiagonalOp(IndexMapOp):
    params = ("x", "offset", "axis1", "axis2")

    def mapping(self, bound):
        axes = int(self.opt(bound, "axis1", 0)), int(self.opt(bound, "axis2", 1))
        return np.diagonal(bound["x"], int(self.opt(bound, "offset", 0)), *axes).copy()


@register_op("Diag", "Diagflat")
class DiagOp(IndexMapOp):
    """diag of a vector (a matrix, zeros off the k-th diagonal) or of a matrix (its k-th
    diagonal); diagflat of the flattened input. Positions are shifted by one so that numpy's
    zeros become -1 (the fill)."""
    params = ("x", "k")

    def mapping(self, bound):
        function = np.diag if self.class_name == "Diag" else np.diagflat
        return function(bound["x"] + 1, int(self.opt(bound, "k", 0))) - 1


@register_op("Hsplit", "Vsplit", "Dsplit", "ArraySplit")
class SplitsOp(IndexMapOp):
    params = ("x", "indices_or_sections", "axis")

    def mapping(self, bound):
        x, pieces = bound["x"], _tuple(self.opt(bound, "indices_or_sections"))
        if self.class_name == "ArraySplit":
            return list(np.array_split(x, pieces, int(self.opt(bound, "axis", 0))))
        function = {"Hsplit": np.hsplit, "Vsplit": np.vsplit, "Dsplit": np.dsplit}[self.class_name]
        return list(function(x, pieces))


# -------------------------------------------------------------------------------------------------
# Several inputs
# -------------------------------------------------------------------------------------------------
@register_op("Hstack", "Vstack", "Dstack")
class StacksOp(IndexMapOp):
    params = ("xs",)
    data_params = ("xs",)

    def mapping(self, bound):
        function = {"Hstack": np.hstack, "Vstack": np.vstack, "Dstack": np.dstack}[self.class_name]
        return function(list(bound["xs"]))


@register_op("Append")
class AppendOp(IndexMapOp):
    params = ("x1", "x2", "axis")
    data_params = ("x1", "x2")

    def mapping(self, bound):
        return np.append(bound["x1"], bound["x2"], self.opt(bound, "axis"))


@register_op("Meshgrid")
class MeshgridOp(IndexMapOp):
    """meshgrid(*x, indexing): its tensors are positional, any number of them."""
    params = ("xs", "indexing")
    data_params = ("xs",)

    def bind(self, args, kwargs) -> dict:
        bound = {"xs": list(args)}
        for key, value in kwargs.items():
            bound[key] = value
        return bound

    def mapping(self, bound):
        indexing = self.opt(bound, "indexing", "xy")
        if indexing not in ("xy", "ij"):
            raise ValueError(f"indexing={indexing!r}")
        return [g.copy() for g in np.meshgrid(*bound["xs"], indexing=indexing)]
