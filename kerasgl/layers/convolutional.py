"""Convolution layers (channels-last; channels_first by transposing): Conv1D/2D, DepthwiseConv1D/2D,
SeparableConv1D/2D, Conv1DTranspose/Conv2DTranspose.

Kernels are packed for the shaders once, in build(); call() only dispatches. 1D layers run as 2D
over one row. Pointwise activations are fused into the convolution; softmax runs after it (on the
layer's real output layout, so channels_first softmax sees the axis Keras's does).
"""
from __future__ import annotations

from ..errors import ModelFileError
from ..ops import conv
from . import activations
from .base import register
from .spatial_utils import SpatialLayer, as_rows, from_rows, int_tuple


class _ConvBase(SpatialLayer):
    """Options every convolution reads: kernel_size, strides, padding, dilation_rate, activation."""
    paddings = ("valid", "same")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        r = self.spatial_rank
        self.kernel_size = int_tuple(self.option("kernel_size"), r, "kernel_size")
        self.strides = int_tuple(self.option("strides", 1), r, "strides")
        self.dilation = int_tuple(self.option("dilation_rate", 1), r, "dilation_rate")
        self.padding = str(self.option("padding", "valid")).lower()
        if self.padding not in self.paddings:
            raise self.unsupported(f"padding={self.padding!r}")
        self.use_bias = bool(self.option("use_bias", True))
        self.activation = self.option("activation")
        self.fused = activations.pointwise(self.activation, keras_major, f"Layer '{self.name}'")
        self.act = self.fused if self.fused is not None else conv.LINEAR
        if self.fused is None:
            self.shaders = tuple(self.shaders) + ("softmax.comp",)

    def check_kernel(self, index: int, expected: tuple) -> None:
        actual = tuple(self.weights_np[index].shape)
        if actual != tuple(expected):
            raise ModelFileError(f"Layer '{self.name}' ({self.class_name}): weight {index} has shape "
                                 f"{actual}, the config implies {tuple(expected)}.")

    def check_channels(self, channels, expected: int) -> None:
        if channels is not None and channels != expected:
            raise self.shape_error(f"expects {expected} input channels. Received {channels}.")

    # 2D geometry of one call: strides, dilation, per-axis (before, after) padding, as 2D pairs.
    def geometry_2d(self, spatial):
        pads = []
        for size, k, s, d in zip(spatial, self.kernel_size, self.strides, self.dilation):
            _, before, after = conv.conv_padding(size, k, s, d, self.padding)
            pads.append((before, after))
        if self.spatial_rank == 1:
            return (1, self.strides[0]), (1, self.dilation[0]), ((0, 0), pads[0])
        return self.strides, self.dilation, tuple(pads)

    def output_spatial(self, spatial):
        return tuple(None if size is None else conv.conv_padding(size, k, s, d, self.padding)[0]
                     for size, k, s, d in zip(spatial, self.kernel_size, self.strides, self.dilation))

    def run_2d(self, x, op):
        """Run op(x4d) -> y4d, with 1D inputs seen as one row."""
        if self.spatial_rank == 2:
            return op(x)
        rows = as_rows(x)
        try:
            return from_rows(op(rows))
        finally:
            rows.dispose()

    def call(self, inputs, **kwargs):
        out = super().call(inputs)
        if self.fused is not None:
            return out
        try:
            return activations.apply(out, self.activation, self.keras_major, self.name)
        finally:
            out.dispose()


class _Conv(_ConvBase):
    shaders = ("conv2d.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.filters = int(self.option("filters"))
        self.groups = int(self.option("groups", 1) or 1)
        self.expect_weights(2 if self.use_bias else 1)
        kernel = self.weights_np[0]
        self.check_kernel(0, self.kernel_size + (kernel.shape[-2], self.filters))
        if self.filters % self.groups:
            raise ModelFileError(f"Layer '{self.name}': filters={self.filters} is not divisible by "
                                 f"groups={self.groups}.")
        self.in_channels = kernel.shape[-2] * self.groups
        if self.use_bias:
            self.check_kernel(1, (self.filters,))

    def channels_last_shape(self, shape):
        self.check_channels(shape[-1], self.in_channels)
        return (shape[0],) + self.output_spatial(shape[1:-1]) + (self.filters,)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        self.kernel = conv.pack_conv(self.weights_np[0], self.weights_np[1] if self.use_bias else None,
                                     self.groups, self.upload)
        self.built = True

    def channels_last_call(self, x):
        self.check_channels(x.shape[-1], self.in_channels)
        strides, dilation, padding = self.geometry_2d(x.shape[1:-1])
        return self.run_2d(x, lambda x4: conv.conv2d(x4, self.kernel, strides, dilation, padding,
                                                     self.act))


@register("Conv2D", "Convolution2D")
class Conv2D(_Conv):
    spatial_rank = 2


@register("Conv1D", "Convolution1D")
class Conv1D(_Conv):
    spatial_rank = 1
    paddings = ("valid", "same", "causal")


class _Depthwise(_ConvBase):
    shaders = ("depthwise_conv2d.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.multiplier = int(self.option("depth_multiplier", 1))
        self.expect_weights(2 if self.use_bias else 1)
        kernel = self.weights_np[0]
        self.in_channels = kernel.shape[-2]
        self.check_kernel(0, self.kernel_size + (self.in_channels, self.multiplier))
        if self.use_bias:
            self.check_kernel(1, (self.in_channels * self.multiplier,))

    def channels_last_shape(self, shape):
        self.check_channels(shape[-1], self.in_channels)
        return (shape[0],) + self.output_spatial(shape[1:-1]) + (self.in_channels * self.multiplier,)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        self.kernel = conv.pack_depthwise(self.weights_np[0],
                                          self.weights_np[1] if self.use_bias else None, self.upload)
        self.built = True

    def channels_last_call(self, x):
        self.check_channels(x.shape[-1], self.in_channels)
        strides, dilation, padding = self.geometry_2d(x.shape[1:-1])
        return self.run_2d(x, lambda x4: conv.depthwise_conv2d(x4, self.kernel, strides, dilation,
                                                               padding, self.act))


@register("DepthwiseConv2D")
class DepthwiseConv2D(_Depthwise):
    spatial_rank = 2


@register("DepthwiseConv1D")
class DepthwiseConv1D(_Depthwise):
    spatial_rank = 1


class _Separable(_ConvBase):
    """Depthwise (no bias, no activation) then a 1x1 convolution with bias and activation."""
    shaders = ("depthwise_conv2d.comp", "conv2d.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.filters = int(self.option("filters"))
        self.multiplier = int(self.option("depth_multiplier", 1))
        self.expect_weights(3 if self.use_bias else 2)
        self.in_channels = self.weights_np[0].shape[-2]
        mid = self.in_channels * self.multiplier
        self.check_kernel(0, self.kernel_size + (self.in_channels, self.multiplier))
        self.check_kernel(1, (1,) * self.spatial_rank + (mid, self.filters))
        if self.use_bias:
            self.check_kernel(2, (self.filters,))

    def channels_last_shape(self, shape):
        self.check_channels(shape[-1], self.in_channels)
        return (shape[0],) + self.output_spatial(shape[1:-1]) + (self.filters,)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        self.depthwise = conv.pack_depthwise(self.weights_np[0], None, self.upload)
        self.pointwise = conv.pack_conv(self.weights_np[1],
                                        self.weights_np[2] if self.use_bias else None, 1, self.upload)
        self.built = True

    def channels_last_call(self, x):
        self.check_channels(x.shape[-1], self.in_channels)
        strides, dilation, padding = self.geometry_2d(x.shape[1:-1])

        def separable(x4):
            mid = conv.depthwise_conv2d(x4, self.depthwise, strides, dilation, padding)
            try:
                return conv.conv2d(mid, self.pointwise, activation=self.act)
            finally:
                mid.dispose()
        return self.run_2d(x, separable)


@register("SeparableConv2D", "SeparableConvolution2D")
class SeparableConv2D(_Separable):
    spatial_rank = 2


@register("SeparableConv1D", "SeparableConvolution1D")
class SeparableConv1D(_Separable):
    spatial_rank = 1
    paddings = ("valid", "same", "causal")


class _ConvTranspose(_ConvBase):
    """A convolution over the input with (stride - 1) zeros between samples (never materialised:
    the shader skips them), the kernel flipped; Keras 3's padding / output_padding rule."""
    shaders = ("conv2d.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.filters = int(self.option("filters"))
        output_padding = self.option("output_padding")
        self.output_padding = (None if output_padding is None
                               else int_tuple(output_padding, self.spatial_rank, "output_padding"))
        self.expect_weights(2 if self.use_bias else 1)
        self.in_channels = self.weights_np[0].shape[-1]
        self.check_kernel(0, self.kernel_size + (self.filters, self.in_channels))
        if self.use_bias:
            self.check_kernel(1, (self.filters,))

    def _axes(self, spatial):
        ops = self.output_padding or (None,) * self.spatial_rank
        return [None if size is None else
                conv.conv_transpose_padding(size, k, s, d, self.padding, op)
                for size, k, s, d, op in zip(spatial, self.kernel_size, self.strides, self.dilation, ops)]

    def channels_last_shape(self, shape):
        self.check_channels(shape[-1], self.in_channels)
        spatial = tuple(None if axis is None else axis[0] for axis in self._axes(shape[1:-1]))
        return (shape[0],) + spatial + (self.filters,)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        strides = self.strides if self.spatial_rank == 2 else (1,) + self.strides
        self.kernel = conv.pack_conv_transpose(self.weights_np[0],
                                               self.weights_np[1] if self.use_bias else None,
                                               strides, self.upload)
        self.built = True

    def channels_last_call(self, x):
        self.check_channels(x.shape[-1], self.in_channels)
        axes = self._axes(x.shape[1:-1])
        dilation = self.dilation
        if self.spatial_rank == 1:
            axes, dilation = [(1, 0, 0)] + axes, (1,) + dilation
        padding = tuple((before, after) for _, before, after in axes)
        out_hw = tuple(size for size, _, _ in axes)
        return self.run_2d(x, lambda x4: conv.conv2d(x4, self.kernel, (1, 1), dilation, padding,
                                                     self.act, out_hw=out_hw))


@register("Conv2DTranspose", "Convolution2DTranspose")
class Conv2DTranspose(_ConvTranspose):
    spatial_rank = 2


@register("Conv1DTranspose", "Convolution1DTranspose")
class Conv1DTranspose(_ConvTranspose):
    spatial_rank = 1
