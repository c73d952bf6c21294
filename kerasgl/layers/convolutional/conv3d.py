"""3D convolution layers: Conv3D (groups, dilation, strides) and Conv3DTranspose (output_padding,
dilation), channels-last (channels_first by transposing, as the 2D layers do).

They are the 2D layers of convolutional.py (options, weight checks, Keras's padding rules, graph
fusions: folded BatchNormalization, fused activation, absorbed ZeroPadding) with a 3D kernel
packing and shaders/conv3d.comp in place of the 2D ones.
"""
from __future__ import annotations

from ...ops import conv3d
from ..base import register
from .conv import _Conv, _ConvTranspose


@register("Conv3D", "Convolution3D")
class Conv3D(_Conv):
    drops_nan = False       # conv3d.comp runs the NaN-keeping activations of activations.glsl
    spatial_rank = 3
    shaders = ("conv3d.comp",)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        kernel, bias = self.folded(self.weights_np[0], self.weights_np[1] if self.use_bias else None,
                                   lambda k, scale: k * scale)
        self.kernel = conv3d.pack_conv3d(kernel, bias, self.groups, self.upload)
        self.built = True

    def channels_last_call(self, x):
        self.check_channels(x.shape[-1], self.in_channels)
        # geometry_2d is rank-generic: per-axis strides, dilation and (before, after) padding.
        strides, dilation, padding = self.geometry_2d(x.shape[1:-1])
        return conv3d.conv3d(x, self.kernel, strides, dilation, padding, self.act)


@register("Conv3DTranspose", "Convolution3DTranspose")
class Conv3DTranspose(_ConvTranspose):
    drops_nan = False       # conv3d.comp runs the NaN-keeping activations of activations.glsl
    spatial_rank = 3
    shaders = ("conv3d.comp",)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        # Kernel [kd, kh, kw, filters, in]: the folded scale is per filter (axis -2).
        kernel, bias = self.folded(self.weights_np[0], self.weights_np[1] if self.use_bias else None,
                                   lambda k, scale: k * scale[:, None])
        self.kernel = conv3d.pack_conv3d_transpose(kernel, bias, self.strides, self.upload)
        self.built = True

    def channels_last_call(self, x):
        self.check_channels(x.shape[-1], self.in_channels)
        axes = self._axes(x.shape[1:-1])
        padding = tuple((before, after) for _, before, after in axes)
        out_dhw = tuple(size for size, _, _ in axes)
        return conv3d.conv3d(x, self.kernel, (1, 1, 1), self.dilation, padding, self.act,
                             out_dhw=out_dhw)
