"""TensorFlow functions that read elements by position: gather, pad and one_hot.

Positions known at load (gather's constant indices, the REFLECT / SYMMETRIC mirrors of pad)
become an index map of one sample, computed once with numpy over the positions of a sample
and uploaded; word_gather.take reads it for every sample of a batch, as it reads indices held
in a tensor. Nothing here moves data across the batch axis:
gathering along it, or padding it, is refused (each sample's result would depend on the others).
"""
from __future__ import annotations

import math

import numpy as np

from ...ops import arg_ops, elementwise, layout, tile_repeat_pad, typed as typed_ops
from ...ops.word_gather import take
from .arguments import is_tensor
from .functions import TFFunction, register


def sample_positions(function, shape):
    """The word positions of one sample of a tensor of `shape` (batch first), shaped as it."""
    sample = tuple(shape[1:])
    if not shape or shape[0] is not None or None in sample:
        raise function.unsupported(f"a tensor of shape {shape} (a batch of samples whose sizes "
                                   "are known at load)")
    return np.arange(math.prod(sample), dtype=np.int64).reshape(sample)


def by_sample_map(x, positions, out_shape):
    """out (out_shape, batch first): word c of sample b is word positions[c] of x's sample b.
    (take.comp: its index buffer is read-only, so a plan may replay it over the map uploaded
    at load.)"""
    samples = layout.reshape(x, (x.shape[0], x.size // max(x.shape[0], 1)))
    return layout.reshape(take(samples, positions, 1), out_shape)


class Gather(TFFunction):
    """tf.gather (recorded as compat.v1.gather) along an axis after the batch: constant indices,
    or indices in an int32 tensor (batch_dims 0, or 1 with the axis right after the batch)."""
    params = ("params", "indices", "validate_indices", "axis", "batch_dims", "name")
    shaders = ("take.comp", "tile_repeat_pad.comp")

    def plan(self, args):
        x = args.tensor("params")
        self.out_dtype = x.dtype
        self.batch_dims = int(args.static("batch_dims", 0))
        axis = args.static("axis", self.batch_dims)
        if not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
            raise self.shape_error(f"axis {axis!r} does not fit a tensor of rank {x.ndim}.")
        self.axis = axis % x.ndim
        if self.axis == 0 and x.shape[0] is None:
            raise self.unsupported("axis 0 (gathering along the batch axis)")
        indices = args.values.get("indices")
        if is_tensor(indices):
            return self._plan_tensor(x, indices)
        self.tensor_indices = False
        if self.batch_dims:
            raise self.unsupported(f"constant indices and batch_dims={self.batch_dims}")
        index = np.asarray(args.static("indices"))
        if index.dtype.kind not in "iu" or (index.size and (index.min() < 0 or index.max()
                                                              >= (x.shape[self.axis] or 0))):
            raise self.shape_error(f"indices {index.tolist()} outside axis {self.axis} of "
                                   f"{x.shape} (TensorFlow refuses them).")
        positions = np.take(sample_positions(self, x.shape), index, axis=self.axis - 1)
        self.map = self.layer.upload(positions.reshape(-1).astype(np.int32), dtype="int32",
                                     name="gather_map")
        self.sample_shape = positions.shape
        return (None,) + self.sample_shape

    def _plan_tensor(self, x, indices):
        self.tensor_indices = True
        if indices.dtype != "int32":
            raise self.unsupported(f"{indices.dtype} indices")
        if self.batch_dims == 0:
            if indices.shape and indices.shape[0] is None and x.shape[0] is None:
                raise self.unsupported("batch_dims=0 and indices with a batch axis (every "
                                       "sample's indices would index every sample)")
            return x.shape[:self.axis] + indices.shape + x.shape[self.axis + 1:]
        if self.batch_dims != 1 or self.axis != 1 or indices.ndim < 1:
            raise self.unsupported(f"batch_dims={self.batch_dims} with axis={self.axis}")
        return x.shape[:1] + indices.shape[1:] + x.shape[2:]

    def run(self, args):
        x = args.tensor("params")
        if not self.tensor_indices:
            return by_sample_map(x, self.map, (x.shape[0],) + self.sample_shape)
        indices = args.tensor("indices")
        if self.batch_dims == 0:
            return take(x, indices, self.axis)
        # batch_dims 1, axis 1: out[b, m, r] = x[b, indices[b, m], r], as take_along_axis
        # with the indices repeated along r.
        b, m, r = x.shape[0], indices.size // max(x.shape[0], 1), math.prod(x.shape[2:])
        along = tile_repeat_pad.tile(layout.reshape(indices, (b, m, 1)), (1, 1, r))
        picked = take(layout.reshape(x, (b, x.shape[1], r)), along, 1, along=True)
        return layout.reshape(picked, (b,) + indices.shape[1:] + x.shape[2:])


register(Gather, ["gather"])


class Pad(TFFunction):
    """tf.pad (recorded as compat.v1.pad): CONSTANT (constant_values), REFLECT and SYMMETRIC."""
    params = ("tensor", "paddings", "mode", "name", "constant_values")
    shaders = ("tile_repeat_pad.comp", "take.comp")

    def plan(self, args):
        x = args.tensor("tensor")
        self.out_dtype = x.dtype
        pads = args.static("paddings")
        if not isinstance(pads, list) or len(pads) != x.ndim \
                or any(len(p) != 2 or min(p) < 0 for p in pads):
            raise self.shape_error(f"paddings {pads!r} do not fit a tensor of rank {x.ndim}.")
        if x.shape[0] is None and any(pads[0]):
            raise self.unsupported("padding the batch axis")
        self.pads = [tuple(int(v) for v in p) for p in pads]
        self.mode = str(args.get("mode", "CONSTANT")).upper()
        if self.mode == "CONSTANT":
            value = args.static("constant_values", 0)
            if not isinstance(value, (int, float)) or (x.dtype != "float32" and value != int(value)):
                raise self.unsupported(f"constant_values={value!r}")
            self.fill = value
        elif self.mode in ("REFLECT", "SYMMETRIC"):
            limit = 0 if self.mode == "REFLECT" else 1
            for (before, after), d in zip(self.pads, x.shape):
                if d is not None and max(before, after) > d - 1 + limit:
                    raise self.shape_error(f"{self.mode} padding {[before, after]} of a size-{d} "
                                           "axis.")
            positions = np.pad(sample_positions(self, x.shape), self.pads[1:],
                               mode=self.mode.lower())
            self.map = self.layer.upload(positions.reshape(-1).astype(np.int32), dtype="int32",
                                         name="pad_map")
        else:
            raise self.unsupported(f"mode={self.mode!r}")
        return tuple(None if d is None else d + a + b for d, (a, b) in zip(x.shape, self.pads))

    def run(self, args):
        x = args.tensor("tensor")
        if self.mode == "CONSTANT":
            return tile_repeat_pad.pad_constant(x, self.pads, self.fill)
        return by_sample_map(x, self.map,
                             tuple(d + a + b for d, (a, b) in zip(x.shape, self.pads)))


register(Pad, ["pad"])


class OneHot(TFFunction):
    """tf.one_hot: on_value at each int32 index along a new axis of `depth`, off_value elsewhere
    (indices outside [0, depth), -1 included, give a row of off_value)."""
    params = ("indices", "depth", "on_value", "off_value", "axis", "dtype", "name")
    shaders = ("one_hot.comp", "binary.comp", "transpose.comp")

    def plan(self, args):
        indices = args.tensor("indices")
        if indices.dtype != "int32":
            raise self.unsupported(f"{indices.dtype} indices")
        self.depth = args.static("depth")
        self.on, self.off = (args.static(p, d) for p, d in (("on_value", 1), ("off_value", 0)))
        dtype = str(args.get("dtype", "float32"))
        if dtype not in ("float32", "int32", "int64") or not isinstance(self.depth, int) \
                or self.depth < 0 or any(not isinstance(v, (int, float)) for v in (self.on, self.off)):
            raise self.unsupported(f"depth={self.depth!r}, on_value={self.on!r}, "
                                   f"off_value={self.off!r}, dtype={dtype!r}")
        self.out_dtype = "float32" if dtype == "float32" else "int32"
        rank = indices.ndim + 1
        axis = args.static("axis", -1)
        if not isinstance(axis, int) or not -1 <= axis < rank:
            raise self.shape_error(f"axis {axis!r} does not fit rank {rank}.")
        self.axis = axis % rank
        if self.axis == 0 and indices.ndim and indices.shape[0] is None:
            raise self.unsupported("axis 0 (the depth before the batch)")
        shape = tuple(indices.shape) + (self.depth,)
        self.perm = list(range(self.axis)) + [rank - 1] + list(range(self.axis, rank - 1))
        return tuple(shape[p] for p in self.perm)

    def run(self, args):
        hot = arg_ops.one_hot(args.tensor("indices"), self.depth)
        if (self.on, self.off) != (1, 0):
            hot = elementwise.add(elementwise.mul(hot, float(self.on) - float(self.off)),
                                  float(self.off))
        if self.perm != sorted(self.perm):
            hot = layout.transpose(hot, self.perm)
        return typed_ops.convert(hot, "int32") if self.out_dtype == "int32" else hot


register(OneHot, ["one_hot"])
