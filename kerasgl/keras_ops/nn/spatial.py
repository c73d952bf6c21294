"""keras.ops.nn (keras/src/ops/nn.py) operations on images as recorded in Keras 3 graphs:
convolutions whose kernels are tensors (computed in the graph, or constant operands:
ops/conv_general.py), pooling (ops/pool.py, pool3d.py, adaptive_pool.py) and depth_to_space /
space_to_depth.

channels_first inputs are transposed to channels_last and the result back (exact: a copy).
Keras 3.15's own ConvTranspose node swaps padding and output_padding when it runs (so Keras
cannot predict such a graph); kerasgl runs what the call asked for, as keras.ops.conv_transpose
does eagerly.
"""
from __future__ import annotations

from ...errors import ShapeError
from ...ops import adaptive_pool, conv_general, depth_space, layout, matmul
from ...ops.conv import conv_padding
from ...ops.pool import pool2d, pool_padding
from ...ops.pool3d import pool3d
from ...tensors import ownership
from ..node import OpNode, _shape, register_op


class _Spatial(OpNode):
    """An op over the spatial axes of [batch, *spatial, channels] (channels_first: transposed)."""
    input_dtypes = ("float32",)
    shaders = ("transpose.comp",)

    def first(self, bound) -> bool:
        fmt = self.opt(bound, "data_format") or "channels_last"
        if fmt not in ("channels_last", "channels_first"):
            raise self.unsupported(f"data_format={fmt!r}")
        return fmt == "channels_first"

    def last_shape(self, bound, shape):
        """`shape` (the input's) in channels_last order."""
        if not 3 <= len(shape) <= 5:
            raise self.unsupported(f"an input of rank {len(shape)} (1 to 3 spatial axes)")
        return (shape[0],) + tuple(shape[2:]) + (shape[1],) if self.first(bound) else tuple(shape)

    def back(self, bound, shape):
        return (shape[0], shape[-1]) + tuple(shape[1:-1]) if self.first(bound) else tuple(shape)

    def output_shape(self, bound):
        return self.back(bound, self.last_output(bound, self.last_shape(bound, _shape(bound["x"]))))

    def run(self, bound):
        x = bound[self.params[0]]
        if not self.first(bound):
            return self.compute(bound, x)
        r = x.ndim - 2

        def compute():
            moved = layout.transpose(x, (0,) + tuple(range(2, r + 2)) + (1,))
            out = self.compute(bound, moved)
            return layout.transpose(out, (0, r + 1) + tuple(range(1, r + 1)))
        return ownership.tidy.run(compute)

    # subclasses: the channels_last output shape, and the computation
    def last_output(self, bound, shape):
        raise NotImplementedError

    def compute(self, bound, x):
        raise NotImplementedError


# -------------------------------------------------------------------------------------------------
# Convolutions
# -------------------------------------------------------------------------------------------------
class _ConvOp(_Spatial):
    params = ("inputs", "kernel")
    shaders = ("conv_general.comp", "transpose.comp")

    def output_shape(self, bound):
        bound = dict(bound, x=bound["inputs"])
        return super().output_shape(bound)

    def geometry(self, bound, r):
        return (conv_general.per_axis(self.opt(bound, "strides", 1), r, "strides"),
                conv_general.per_axis(self.opt(bound, "dilation_rate", 1), r, "dilation_rate"),
                self.padding(bound))

    def padding(self, bound):
        padding = str(self.opt(bound, "padding", "valid")).lower()
        if padding not in ("valid", "same"):
            raise self.unsupported(f"padding={padding!r} (Keras's own op runs 'valid' and "
                                   "'same' only)")
        return padding

    def kernel_shape(self, bound, r, name="kernel"):
        k = _shape(bound[name])
        if len(k) != r + 2 or None in k:
            raise self.shape_error(f"{name} of shape {list(k)} does not fit {r} spatial axes.")
        return k

    def last_output(self, bound, shape):
        r = len(shape) - 2
        k = self.kernel_shape(bound, r)
        strides, dilation, padding = self.geometry(bound, r)
        spatial = tuple(None if n is None else conv_padding(n, kk, s, d, padding)[0]
                        for n, kk, s, d in zip(shape[1:-1], k[:r], strides, dilation))
        return (shape[0],) + spatial + (self.channels(bound, shape, k),)


@register_op("Conv")
class ConvOp(_ConvOp):
    def channels(self, bound, shape, k):
        if shape[-1] is not None and shape[-1] != k[-2]:
            raise self.shape_error(f"kernel of shape {list(k)} does not fit {shape[-1]} channels.")
        return k[-1]

    def compute(self, bound, x):
        strides, dilation, padding = self.geometry(bound, x.ndim - 2)
        return conv_general.conv(x, bound["kernel"], strides, padding, dilation)


@register_op("DepthwiseConv")
class DepthwiseConvOp(_ConvOp):
    def channels(self, bound, shape, k):
        return k[-2] * k[-1]

    def compute(self, bound, x):
        strides, dilation, padding = self.geometry(bound, x.ndim - 2)
        return conv_general.depthwise_conv(x, bound["kernel"], strides, padding, dilation)


@register_op("SeparableConv")
class SeparableConvOp(_ConvOp):
    """The depthwise convolution, then the pointwise (1x1) kernel as a matmul."""
    params = ("inputs", "depthwise_kernel", "pointwise_kernel")
    shaders = ("conv_general.comp", "transpose.comp", "matmul.comp")

    def kernel_shape(self, bound, r, name="depthwise_kernel"):
        return super().kernel_shape(bound, r, name)

    def channels(self, bound, shape, k):
        return super().kernel_shape(bound, len(k) - 2, "pointwise_kernel")[-1]

    def compute(self, bound, x):
        strides, dilation, padding = self.geometry(bound, x.ndim - 2)
        point = bound["pointwise_kernel"]

        def run():
            deep = conv_general.depthwise_conv(x, bound["depthwise_kernel"], strides, padding,
                                               dilation)
            flat = layout.reshape(point, point.shape[-2:])
            return matmul.matmul(deep, flat)
        return ownership.tidy.run(run)


@register_op("ConvTranspose")
class ConvTransposeOp(_ConvOp):
    def last_output(self, bound, shape):
        r = len(shape) - 2
        k = self.kernel_shape(bound, r)
        strides, dilation, padding = self.geometry(bound, r)
        out = self.opt(bound, "output_padding")
        extra = (out,) * r if out is None or isinstance(out, int) else tuple(out)
        spatial = tuple(None if n is None else conv_general.transpose_geometry(
            (n,), (kk,), (s,), (d,), padding, p)[0][0]
            for n, kk, s, d, p in zip(shape[1:-1], k[:r], strides, dilation, extra))
        return (shape[0],) + spatial + (k[-2],)

    def compute(self, bound, x):
        strides, dilation, padding = self.geometry(bound, x.ndim - 2)
        return conv_general.conv_transpose(x, bound["kernel"], strides, padding,
                                           self.opt(bound, "output_padding"), dilation)


# -------------------------------------------------------------------------------------------------
# Pooling
# -------------------------------------------------------------------------------------------------
@register_op("MaxPool", "AveragePool")
class PoolOp(_Spatial):
    params = ("inputs",)
    shaders = ("pool2d.comp", "pool3d.comp", "transpose.comp")

    def output_shape(self, bound):
        return super().output_shape(dict(bound, x=bound["inputs"]))

    def window(self, bound, r):
        pool = conv_general.per_axis(self.opt(bound, "pool_size"), r, "pool_size")
        strides = self.opt(bound, "strides")
        strides = pool if strides is None else conv_general.per_axis(strides, r, "strides")
        padding = str(self.opt(bound, "padding", "valid")).lower()
        if padding not in ("valid", "same"):
            raise self.unsupported(f"padding={padding!r}")
        return pool, strides, padding

    def last_output(self, bound, shape):
        pool, strides, padding = self.window(bound, len(shape) - 2)
        spatial = tuple(None if n is None else pool_padding(n, p, s, padding)[0]
                        for n, p, s in zip(shape[1:-1], pool, strides))
        return (shape[0],) + spatial + (shape[-1],)

    def compute(self, bound, x):
        pool, strides, padding = self.window(bound, x.ndim - 2)
        mode = "max" if self.class_name == "MaxPool" else "avg"
        if x.ndim == 5:
            return pool3d(x, mode, pool, strides, padding)
        if x.ndim == 4:
            return pool2d(x, mode, pool, strides, padding)

        def run():
            wide = layout.reshape(x, (x.shape[0], 1) + x.shape[1:])
            out = pool2d(wide, mode, (1,) + pool, (1,) + strides, padding)
            return layout.reshape(out, (out.shape[0],) + out.shape[2:])
        return ownership.tidy.run(run)


@register_op("AdaptiveAveragePool", "AdaptiveMaxPool")
class AdaptivePoolOp(_Spatial):
    params = ("inputs",)
    shaders = ("adaptive_pool.comp", "transpose.comp")

    def output_shape(self, bound):
        return super().output_shape(dict(bound, x=bound["inputs"]))

    def size(self, bound, r):
        return conv_general.per_axis(self.opt(bound, "output_size"), r, "output_size")

    def last_output(self, bound, shape):
        return (shape[0],) + self.size(bound, len(shape) - 2) + (shape[-1],)

    def compute(self, bound, x):
        mode = "max" if self.class_name == "AdaptiveMaxPool" else "avg"
        return adaptive_pool.adaptive_pool(x, mode, self.size(bound, x.ndim - 2))


# -------------------------------------------------------------------------------------------------
# Rearrangements and encodings
# -------------------------------------------------------------------------------------------------
@register_op("DepthToSpace", "SpaceToDepth")
class DepthSpaceOp(OpNode):
    """Pixel (un)shuffle: a reshape, a transpose and a reshape, as Keras's jax backend."""
    params = ("x", "block_size", "data_format")
    input_dtypes = ("float32", "int32")
    keeps_dtype = True
    shaders = ("transpose.comp",)

    def plan(self, bound):
        """The kind, block size and layout of this call (ops/depth_space.py does the rest)."""
        kind = "depth_to_space" if self.class_name == "DepthToSpace" else "space_to_depth"
        first = (self.opt(bound, "data_format") or "channels_last") == "channels_first"
        return kind, int(self.opt(bound, "block_size")), first

    def _checked(self, fn, value, bound):
        try:
            return fn(value, *self.plan(bound))
        except ShapeError as exc:
            raise self.shape_error(str(exc)) from None

    def output_shape(self, bound):
        return self._checked(depth_space.output_shape, _shape(bound["x"]), bound)

    def run(self, bound):
        return self._checked(depth_space.depth_space, bound["x"], bound)
