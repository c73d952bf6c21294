"""keras.ops.numpy (keras/src/ops/numpy.py) operations that change only a tensor's shape, as
recorded in Keras 3 graphs: reshape, squeeze and expand_dims (views of the same data), and
transpose (a copy in the new order).
"""
from __future__ import annotations

import math

from ...ops import layout
from ..node import OpNode, _shape, register_op


# -------------------------------------------------------------------------------------------------
# Layout: reshape and friends are views (no data moves); transpose moves data.
# -------------------------------------------------------------------------------------------------
@register_op("Reshape")
class ReshapeOp(OpNode):
    params = ("x", "newshape")
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def target(self, bound):
        shape = self.opt(bound, "newshape", self.opt(bound, "new_shape"))
        return (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)

    def output_shape(self, bound):
        source, target = _shape(bound["x"]), self.target(bound)
        if -1 in target and None not in source:
            known = math.prod(d for d in target if d != -1)
            size = math.prod(source)
            if known == 0 or size % known:
                raise self.shape_error(f"cannot reshape {list(source)} to {list(target)}.")
            return tuple(size // known if d == -1 else d for d in target)
        if None not in source and math.prod(source) != math.prod(target):
            raise self.shape_error(f"cannot reshape {list(source)} to {list(target)}.")
        return tuple(None if d == -1 else d for d in target)

    def run(self, bound):
        return layout.reshape(bound["x"], self.target(bound))


class _ReshapingOp(OpNode):
    """An op that only changes the shape: new_shape(shape, bound) for symbolic and real inputs
    alike, run as a reshape (a view)."""
    params = ("x", "axis")
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def new_shape(self, shape, bound):
        raise NotImplementedError

    def output_shape(self, bound):
        return self.new_shape(_shape(bound["x"]), bound)

    def run(self, bound):
        x = bound["x"]
        return layout.reshape(x, self.new_shape(x.shape, bound))


@register_op("Squeeze")
class SqueezeOp(_ReshapingOp):
    def new_shape(self, shape, bound):
        axis = self.opt(bound, "axis")
        if axis is None:
            return tuple(n for n in shape if n != 1)
        axes = self.axes_of(axis, len(shape))
        for a in axes:
            if shape[a] not in (1, None):
                raise self.shape_error(f"cannot squeeze axis {a} of size {shape[a]} in {list(shape)}.")
        return tuple(n for d, n in enumerate(shape) if d not in axes)


@register_op("ExpandDims")
class ExpandDimsOp(_ReshapingOp):
    def new_shape(self, shape, bound):
        axis = self.opt(bound, "axis")
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        rank = len(shape) + len(axes)
        positions = sorted(a % rank for a in axes)
        out, source = [], iter(shape)
        for d in range(rank):
            out.append(1 if d in positions else next(source))
        return tuple(out)


@register_op("Transpose")
class TransposeOp(OpNode):
    params = ("x", "axes")
    input_dtypes = ("float32", "int32")
    keeps_dtype = True
    shaders = ("transpose.comp",)

    def perm(self, rank, bound):
        axes = self.opt(bound, "axes")
        if axes is None:
            return tuple(range(rank - 1, -1, -1))
        return tuple(int(a) % rank for a in axes)

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        return tuple(shape[a] for a in self.perm(len(shape), bound))

    def run(self, bound):
        x = bound["x"]
        return layout.transpose(x, self.perm(x.ndim, bound))
