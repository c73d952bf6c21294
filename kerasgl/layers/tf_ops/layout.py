"""TensorFlow functions that rearrange a tensor without arithmetic: reshape, transpose,
expand_dims, squeeze, tile, depth_to_space and space_to_depth. Views where the data does not
move (layout.reshape), word copies otherwise (transpose.comp, tile_repeat_pad.comp): float32,
int32 and bool alike.

A reshape's shape may be computed from tf.shape: `[tf.shape(x)[0], -1, 3]`. Its entries are
known at load except multiples of the batch size (values.Batch), which take the batch size the
model runs with: an entry k * batch is k times the reshaped tensor's axis 0 (its batch axis,
unknown at load), or, when it is the only entry not known, whatever the other entries leave
(as a -1). Any other shape that is not known at load is refused.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import ShapeError
from ...ops import depth_space, layout, tile_repeat_pad
from .functions import TFFunction, register
from .values import Batch


class Reshape(TFFunction):
    params = ("tensor", "shape")
    shaders = ()

    def plan(self, args):
        x = args.tensor("tensor")
        self.out_dtype = x.dtype
        target = args.static("shape", batch=True)
        target = [target] if not isinstance(target, list) else target
        if any(not (isinstance(d, Batch) or (isinstance(d, int) and d >= -1)) for d in target) \
                or sum(d == -1 for d in target) > 1:
            raise self.unsupported(f"shape={target!r}")
        batches = [d for d in target if isinstance(d, Batch)]
        if batches and x.shape and x.shape[0] is None:
            self.target = [("batch", d.k) if isinstance(d, Batch) else d for d in target]
        elif len(batches) == 1 and -1 not in target:
            self.target = [-1 if isinstance(d, Batch) else d for d in target]
        elif batches:
            raise self.unsupported(f"shape={target!r} (sizes known only when the model runs)")
        else:
            self.target = list(target)
        return self._load_shape(x.shape, target)

    def _load_shape(self, shape, target) -> tuple:
        """The output shape at load: a -1 is known when the sizes it divides are, counting the
        batch size (the input's one unknown axis 0) as a symbol."""
        out = [None if isinstance(d, Batch) or d == -1 else d for d in target]
        if -1 not in target:
            if None not in shape and not any(isinstance(d, Batch) for d in target) \
                    and math.prod(shape) != math.prod(target):
                raise self.shape_error(f"cannot reshape {list(shape)} to {target}.")
            return tuple(out)
        known_in = [d for d in shape if d is not None]
        batch_in = len(shape) - len(known_in)
        rest = [d for d in target if d != -1]
        batch_out = sum(isinstance(d, Batch) for d in rest)
        divisor = math.prod(d.k if isinstance(d, Batch) else d for d in rest)
        if batch_in == batch_out and (batch_in == 0 or (batch_in == 1 and shape[0] is None)) \
                and divisor and math.prod(known_in) % divisor == 0:
            out[target.index(-1)] = math.prod(known_in) // divisor
        elif batch_in == batch_out == 0:
            raise self.shape_error(f"cannot reshape {list(shape)} to {target}.")
        return tuple(out)

    def value(self, args):
        x = args.values["tensor"]
        if x.value is None or any(isinstance(d, tuple) for d in self.target):
            return None
        try:
            return np.reshape(x.value, [d for d in self.target])
        except ValueError:
            return None

    def run(self, args):
        x = args.tensor("tensor")
        target = [d[1] * x.shape[0] if isinstance(d, tuple) else d for d in self.target]
        return layout.reshape(x, target)


register(Reshape, ["reshape"])


class Transpose(TFFunction):
    """tf.transpose (recorded as compat.v1.transpose): perm, or the axes reversed."""
    params = ("a", "perm", "conjugate")
    shaders = ("transpose.comp",)

    def plan(self, args):
        x = args.tensor("a")
        self.out_dtype = x.dtype
        perm = args.static("perm", None)
        try:
            self.perm = layout.normalize_permutation(perm, x.ndim)
        except ShapeError as exc:
            raise self.shape_error(str(exc)) from None
        return tuple(x.shape[p] for p in self.perm)

    def value(self, args):
        x = args.values["a"]
        return None if x.value is None else np.transpose(x.value, self.perm)

    def run(self, args):
        return layout.transpose(args.tensor("a"), self.perm)


register(Transpose, ["transpose"])


class ExpandDims(TFFunction):
    params = ("input", "axis")
    aliases = {"dim": "axis"}

    def plan(self, args):
        x = args.tensor("input")
        self.out_dtype = x.dtype
        axis = args.static("axis")
        if not isinstance(axis, int) or not -x.ndim - 1 <= axis <= x.ndim:
            raise self.shape_error(f"axis {axis!r} does not fit a tensor of rank {x.ndim}.")
        self.axis = axis % (x.ndim + 1)
        return _expanded(x.shape, self.axis)

    def value(self, args):
        x = args.values["input"]
        return None if x.value is None else np.expand_dims(x.value, self.axis)

    def run(self, args):
        x = args.tensor("input")
        return layout.reshape(x, _expanded(x.shape, self.axis))


def _expanded(shape, axis: int) -> tuple:
    return tuple(shape[:axis]) + (1,) + tuple(shape[axis:])


register(ExpandDims, ["expand_dims"])


class Squeeze(TFFunction):
    """tf.squeeze (compat.v1.squeeze; squeeze_dims): the given size-1 axes, or every one (only
    where every size is known at load: TensorFlow would squeeze a batch of one too)."""
    params = ("input", "axis", "name", "squeeze_dims")
    aliases = {"squeeze_dims": "axis"}

    def plan(self, args):
        x = args.tensor("input")
        self.out_dtype = x.dtype
        axis = args.static("axis", None)
        if axis is None:
            if None in x.shape:
                raise self.unsupported(f"no axis on a tensor of shape {x.shape} (which axes go "
                                       "depends on sizes known only when the model runs)")
            axes = {a for a, d in enumerate(x.shape) if d == 1}
        else:
            axes = {a % x.ndim for a in ([axis] if isinstance(axis, int) else axis)}
            if any(x.shape[a] not in (1, None) for a in axes):
                raise self.shape_error(f"cannot squeeze axes {sorted(axes)} of {x.shape}.")
        self.axes = axes
        return _squeezed(x.shape, axes)

    def value(self, args):
        x = args.values["input"]
        return None if x.value is None else np.reshape(x.value, _squeezed(x.value.shape, self.axes))

    def run(self, args):
        x = args.tensor("input")
        return layout.reshape(x, _squeezed(x.shape, self.axes))


def _squeezed(shape, axes) -> tuple:
    return tuple(d for a, d in enumerate(shape) if a not in axes)


register(Squeeze, ["squeeze"])


class Tile(TFFunction):
    params = ("input", "multiples")
    shaders = ("tile_repeat_pad.comp",)

    def plan(self, args):
        x = args.tensor("input")
        self.out_dtype = x.dtype
        self.reps = args.static("multiples")
        if not isinstance(self.reps, list) or len(self.reps) != x.ndim \
                or any(not isinstance(r, int) or r < 0 for r in self.reps):
            raise self.shape_error(f"multiples {self.reps!r} do not fit a tensor of rank {x.ndim}.")
        return tuple(None if d is None else d * r for d, r in zip(x.shape, self.reps))

    def run(self, args):
        return tile_repeat_pad.tile(args.tensor("input"), self.reps)


register(Tile, ["tile"])


class DepthSpace(TFFunction):
    """tf.nn.depth_to_space / space_to_depth (fixed `kind`), NHWC or NCHW."""
    params = ("input", "block_size", "data_format", "name")
    shaders = ("transpose.comp",)

    def plan(self, args):
        x = args.tensor("input")
        self.out_dtype = x.dtype
        fmt = str(args.get("data_format", "NHWC"))
        self.block = args.static("block_size")
        if fmt not in ("NHWC", "NCHW") or not isinstance(self.block, int) or self.block < 2:
            raise self.unsupported(f"data_format={fmt!r}, block_size={self.block!r}")
        self.first = fmt == "NCHW"
        try:
            return depth_space.output_shape(x.shape, self.fixed["kind"], self.block, self.first)
        except ShapeError as exc:
            raise self.shape_error(str(exc)) from None

    def run(self, args):
        return depth_space.depth_space(args.tensor("input"), self.fixed["kind"], self.block,
                                       self.first)


register(DepthSpace, {"nn.depth_to_space": {"kind": "depth_to_space"},
                      "depth_to_space": {"kind": "depth_to_space"},
                      "nn.space_to_depth": {"kind": "space_to_depth"},
                      "space_to_depth": {"kind": "space_to_depth"}})
