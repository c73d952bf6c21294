"""Convolution layers (channels-last; channels_first by transposing): Conv1D/2D, DepthwiseConv1D/2D,
SeparableConv1D/2D, Conv1DTranspose/Conv2DTranspose.

Kernels are packed for the shaders once, in build(); call() only dispatches. Conv1D/2D kernels
(transposed too, and a separable convolution's pointwise kernel) are stored as load_model's
storage_dtype asks (float16: halves, ops/half_weights.py); depthwise kernels stay float32. 1D layers run as 2D
over one row. Pointwise activations are fused into the convolution; softmax runs after it (on the
layer's real output layout, so channels_first softmax sees the axis Keras's does).

Graph fusions (the protocol of layers/base.py, which compiler/fusion.py calls before build when
this layer's output feeds only the next layer): `fold_channel_affine(scale, shift)` folds a
following per-output-channel affine map (an inference BatchNormalization) into kernel and bias,
`fuse_activation(pointwise)` adopts a following pointwise activation, `absorb_zero_padding(pads)`
takes over a preceding ZeroPadding, `absorb_max_pool(layer)` (Conv2D) a following 2x2
MaxPooling2D, and `absorb_add(epilogue)` (Conv2D) the Add of a residual connection. Each returns
False, changing nothing, where the fusion would not be exact.
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelFileError, UnsupportedLayerError
from ...ops import conv
from ...tensors import ownership
from .. import activation_functions, config_values
from ..base import AffineFoldable, register
from ..spatial_utils import SpatialLayer


class _ConvBase(AffineFoldable, SpatialLayer):
    """Options every convolution reads: kernel_size, strides, padding, dilation_rate, activation."""
    paddings = ("valid", "same")     # the ones kerasgl runs (Keras knows "causal" too, in 1D)

    @classmethod
    def weight_count(cls, config):
        return 1 + bool(config.get("use_bias", True))        # kernel (+ bias)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        r = self.spatial_rank
        # Keras refuses 0 (and negative) kernel sizes, strides and dilation rates.
        self.kernel_size = config_values.int_tuple(self, "kernel_size", r)
        self.strides = config_values.int_tuple(self, "strides", r, 1)
        self.dilation = config_values.int_tuple(self, "dilation_rate", r, 1)
        # "causal" is Keras's (Conv1D); kerasgl refuses it as unsupported where it does not run it.
        self.padding = config_values.choice(self, "padding", ("valid", "same", "causal"), "valid")
        if self.padding not in self.paddings:
            raise self.unsupported(f"padding={self.padding!r}")
        self.use_bias = config_values.flag(self, "use_bias", True)
        self.activation = config_values.activation(self)
        self.fused = activation_functions.pointwise(self.activation, keras_major, f"Layer '{self.name}'")
        self.act = self.fused if self.fused is not None else conv.LINEAR
        if self.fused is None:
            self.shaders = tuple(self.shaders) + ("softmax.comp",)

    @property
    def drops_nan(self) -> bool:
        """conv2d.comp / depthwise_conv2d.comp run a linear / ReLU / ReLU6 activation (and a
        fused 2x2 max pooling) with GLSL's min/max, which drop a NaN (see act_clamp there)."""
        return conv.clamp_bounds(self.act) is not None

    def refuse_nonfinite_weights(self, *arrays) -> None:
        """Where the kernel drops NaN, weights of NaN or infinity (the file's, or after folding a
        BatchNormalization in) would make finite outputs where Keras gives NaN (0 * inf): refused
        at load rather than answered wrongly (docs/limitations.md)."""
        if not self.drops_nan:
            return
        bad = sum(int(np.size(a) - np.count_nonzero(np.isfinite(a))) for a in arrays if a is not None)
        if bad:
            raise UnsupportedLayerError(
                f"Layer '{self.name}' ({self.class_name}): its kernel or bias holds {bad} NaN or "
                f"infinite value(s) (after folding any BatchNormalization in). kerasgl's "
                f"convolution kernel clamps its activation with min/max, which would turn the NaN "
                f"Keras computes from them into numbers, so such weights are refused "
                f"(docs/limitations.md).")

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
        extra = self._extra_padding or ((0, 0),) * self.spatial_rank
        for size, k, s, d, (a, b) in zip(spatial, self.kernel_size, self.strides, self.dilation, extra):
            _, before, after = conv.conv_padding(size + a + b, k, s, d, self.padding)
            pads.append((before + a, after + b))
        if self.spatial_rank == 1:
            return (1, self.strides[0]), (1, self.dilation[0]), ((0, 0), pads[0])
        return self.strides, self.dilation, tuple(pads)

    def output_spatial(self, spatial):
        out = tuple(None if size is None else conv.conv_padding(size, k, s, d, self.padding)[0]
                    for size, k, s, d in zip(self.input_spatial(spatial), self.kernel_size,
                                             self.strides, self.dilation))
        if any(size is not None and size <= 0 for size in out):
            # Keras refuses it when it builds the layer: a kernel (dilated) larger than the input.
            raise self.shape_error(f"a kernel of size {list(self.kernel_size)} (dilation "
                                   f"{list(self.dilation)}) does not fit the input's spatial "
                                   f"shape {list(spatial)}: the output would be {list(out)}.")
        return out

    # -- graph fusions ------------------------------------------------------------------------
    out_channels = 0          # set by subclasses
    _extra_padding = None     # ((top, bottom), (left, right)) of an absorbed ZeroPadding (2D)

    def _linear_and_unbuilt(self) -> bool:
        return (not self.built and not self.channels_first and self.fused is not None
                and self.fused.is_identity)

    def output_rank(self):
        return self.spatial_rank + 2

    @property
    def fold_width(self) -> int:
        return self.out_channels

    def fuse_activation(self, pointwise) -> bool:
        """Adopt a pointwise activation (kerasgl.layers.activation_functions.Pointwise) applied right after."""
        if pointwise is None or not self._linear_and_unbuilt():
            return False
        self.fused = self.act = pointwise
        return True

    def absorb_zero_padding(self, pads) -> bool:
        """Take over a ZeroPadding applied right before (pads: one (before, after) pair per
        spatial axis): exact for padding="valid" convolutions."""
        if self.built or self.channels_first or self.padding != "valid" \
                or self._extra_padding is not None or len(pads) != self.spatial_rank:
            return False
        self._extra_padding = tuple((int(a), int(b)) for a, b in pads)
        return True

    def folded(self, kernel, bias, channel_axis_scale):
        """(kernel, bias) with the folded affine map applied; channel_axis_scale(kernel, scale)
        multiplies the kernel's output channels."""
        if self._fold is not None:
            scale, shift = self._fold
            bias = (np.zeros(self.out_channels, np.float32) if bias is None
                    else np.asarray(bias, np.float32))
            kernel, bias = channel_axis_scale(np.asarray(kernel, np.float32), scale), bias * scale + shift
        self.refuse_nonfinite_weights(kernel, bias)
        return kernel, bias

    def input_spatial(self, spatial):
        """Spatial sizes this layer convolves: after an absorbed ZeroPadding."""
        if self._extra_padding is None:
            return tuple(spatial)
        return tuple(None if size is None else size + a + b
                     for size, (a, b) in zip(spatial, self._extra_padding))

    def call(self, inputs, **kwargs):
        convolve = super().call
        if self.fused is not None:
            return convolve(inputs)
        return ownership.tidy.run(lambda: activation_functions.apply(
            convolve(inputs), self.activation, self.keras_major, self.name))


class _Conv(_ConvBase):
    shaders = ("conv2d.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.filters = config_values.positive_int(self, "filters")
        self.groups = config_values.positive_int(self, "groups", 1)
        if max(self.strides) > 1 and max(self.dilation) > 1:
            raise config_values.error(self, "dilation_rate", self.option("dilation_rate"),
                                      "1 with strides > 1 (Keras refuses both above 1)")
        expected = 2 if self.use_bias else 1
        if self.option("lora_rank") and len(self.weights_np) == expected + 2:
            # .keras files hold the merged kernel (nothing to do); legacy .h5 files keep the
            # LoRA factors apart, and merging them is not implemented.
            raise self.unsupported("a LoRA-enabled convolution saved with unmerged factors (lora_rank)")
        self.expect_weights(expected)
        kernel = self.weights_np[0]
        self.check_kernel(0, self.kernel_size + (kernel.shape[-2], self.filters))
        if self.filters % self.groups:
            raise ModelFileError(f"Layer '{self.name}': filters={self.filters} is not divisible by "
                                 f"groups={self.groups}.")
        self.in_channels = kernel.shape[-2] * self.groups
        self.out_channels = self.filters
        if self.use_bias:
            self.check_kernel(1, (self.filters,))

    def channels_last_shape(self, shape):
        self.check_channels(shape[-1], self.in_channels)
        spatial = self.output_spatial(shape[1:-1])
        if self._pool > 1:                       # a MaxPooling2D fused in (absorb_max_pool)
            spatial = tuple(None if size is None else size // self._pool for size in spatial)
        return (shape[0],) + spatial + (self.filters,)

    def unfused_output_shape(self, input_shape):
        """The output shape Keras reports (before a fused-in pooling), for summary()."""
        pool, self._pool = self._pool, 1
        try:
            return self.compute_output_shape(input_shape)
        finally:
            self._pool = pool

    def build(self, input_shape, residual_shape=None):
        self.compute_output_shape(input_shape)
        kernel, bias = self.folded(self.weights_np[0], self.weights_np[1] if self.use_bias else None,
                                   lambda k, scale: k * scale)
        self.kernel = conv.pack_conv(kernel, bias, self.groups, self.upload,
                                     dtype=self.storage_dtype)
        self.built = True

    def channels_last_call(self, x):
        self.check_channels(x.shape[-1], self.in_channels)
        strides, dilation, padding = self.geometry_2d(x.shape[1:-1])
        return self.run_2d(x, lambda x4: conv.conv2d(x4, self.kernel, strides, dilation, padding,
                                                     self.act, pool=self._pool))

    # -- an Add fused in (a residual connection) -------------------------------------------------
    _residual = False         # call(x, residual) computes act(conv(x) + residual)

    def absorb_add(self, epilogue) -> bool:
        """Take over the Add this convolution's output goes to (and the Add's fused activation,
        `epilogue`, None for none): its other input is then this layer's second input, added in
        the epilogue before the activation. Exact: the same sum, then the same activation."""
        if (self.built or self.channels_first or self.spatial_rank != 2 or self._pool != 1
                or self._residual or self.groups != 1 or self.filters % 4
                or self.fused is None or not self.fused.is_identity):
            return False
        self._residual = True
        if epilogue is not None:
            self.fused = self.act = epilogue
        return True

    def compute_output_shape(self, input_shape, residual_shape=None):
        return super().compute_output_shape(input_shape)

    def call(self, inputs, residual=None, **kwargs):
        if residual is None:
            return super().call(inputs)
        self.check_channels(inputs.shape[-1], self.in_channels)   # channels-last 2D (absorb_add)
        strides, dilation, padding = self.geometry_2d(inputs.shape[1:-1])
        return conv.conv2d(inputs, self.kernel, strides, dilation, padding, self.act,
                           residual=residual)

    # -- MaxPooling2D fused in -----------------------------------------------------------------
    _pool = 1                 # > 1: a following MaxPooling2D (pool x pool, stride pool, valid)

    def absorb_max_pool(self, pool_layer) -> bool:
        """Take over a MaxPooling2D applied right after (and after any fused activation): exact
        for 2x2 windows with stride 2 and valid padding over a monotone activation (max and a
        clamp commute), computed in the convolution's own dispatch."""
        if (self.built or self.channels_first or self.spatial_rank != 2 or self._pool != 1
                or self.fused is None or conv.clamp_bounds(self.act) is None
                or pool_layer.pooling() != ("max", (2, 2), (2, 2), "valid")):
            return False
        self._pool = 2
        return True


@register("Conv2D", "Convolution2D")
class Conv2D(_Conv):
    spatial_rank = 2


@register("Conv1D", "Convolution1D")
class Conv1D(_Conv):
    spatial_rank = 1
    paddings = ("valid", "same", "causal")


# Keras 2 put `groups` on every Conv subclass. On depthwise, separable and transposed convolutions
# it meant nothing: DepthwiseConv and SeparableConv always wrote 1, and tf-keras' transposed
# convolutions ignore the value (their kernel is the full (k, k, filters, in_channels) kernel and
# they run an ungrouped transposed convolution even with groups=2; see the
# conv_groups_and_transpose fixture). Keras 3's classes have no such argument (and refuse the file).
def _without_keras2_groups(cls, config: dict) -> dict:
    config.pop("groups", None)
    return config


class _Depthwise(_ConvBase):
    shaders = ("depthwise_conv2d.comp",)
    normalize_keras2_config = classmethod(_without_keras2_groups)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.multiplier = config_values.positive_int(self, "depth_multiplier", 1)
        self.expect_weights(2 if self.use_bias else 1)
        kernel = self.weights_np[0]
        self.in_channels = kernel.shape[-2]
        self.check_kernel(0, self.kernel_size + (self.in_channels, self.multiplier))
        self.out_channels = self.in_channels * self.multiplier
        if self.use_bias:
            self.check_kernel(1, (self.out_channels,))

    def channels_last_shape(self, shape):
        self.check_channels(shape[-1], self.in_channels)
        return (shape[0],) + self.output_spatial(shape[1:-1]) + (self.in_channels * self.multiplier,)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        kernel, bias = self.folded(self.weights_np[0], self.weights_np[1] if self.use_bias else None,
                                   lambda k, scale: k * scale.reshape(k.shape[-2:]))
        self.kernel = conv.pack_depthwise(kernel, bias, self.upload)
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
    normalize_keras2_config = classmethod(_without_keras2_groups)

    @classmethod
    def weight_count(cls, config):
        return 2 + bool(config.get("use_bias", True))        # depthwise, pointwise (+ bias)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.filters = config_values.positive_int(self, "filters")
        self.multiplier = config_values.positive_int(self, "depth_multiplier", 1)
        self.expect_weights(3 if self.use_bias else 2)
        self.in_channels = self.weights_np[0].shape[-2]
        mid = self.in_channels * self.multiplier
        self.out_channels = self.filters
        self.check_kernel(0, self.kernel_size + (self.in_channels, self.multiplier))
        self.check_kernel(1, (1,) * self.spatial_rank + (mid, self.filters))
        if self.use_bias:
            self.check_kernel(2, (self.filters,))

    def channels_last_shape(self, shape):
        self.check_channels(shape[-1], self.in_channels)
        return (shape[0],) + self.output_spatial(shape[1:-1]) + (self.filters,)

    @property
    def drops_nan(self) -> bool:
        return True           # the depthwise stage runs linear, as a clamp (conv.LINEAR)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        self.refuse_nonfinite_weights(self.weights_np[0])
        self.depthwise = conv.pack_depthwise(self.weights_np[0], None, self.upload)
        kernel, bias = self.folded(self.weights_np[1], self.weights_np[2] if self.use_bias else None,
                                   lambda k, scale: k * scale)
        # The pointwise kernel as storage_dtype asks; the depthwise one stays float32.
        self.pointwise = conv.pack_conv(kernel, bias, 1, self.upload, dtype=self.storage_dtype)
        self.built = True

    def channels_last_call(self, x):
        self.check_channels(x.shape[-1], self.in_channels)
        strides, dilation, padding = self.geometry_2d(x.shape[1:-1])

        def separable(x4):
            mid = conv.depthwise_conv2d(x4, self.depthwise, strides, dilation, padding)
            return conv.conv2d(mid, self.pointwise, activation=self.act)
        return ownership.tidy.run(self.run_2d, x, separable)


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
    normalize_keras2_config = classmethod(_without_keras2_groups)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.filters = config_values.positive_int(self, "filters")
        self.output_padding = (None if self.option("output_padding") is None else
                               config_values.int_tuple(self, "output_padding", self.spatial_rank,
                                                       minimum=0))
        self.expect_weights(2 if self.use_bias else 1)
        self.in_channels = self.weights_np[0].shape[-1]
        self.out_channels = self.filters
        self.check_kernel(0, self.kernel_size + (self.filters, self.in_channels))
        if self.use_bias:
            self.check_kernel(1, (self.filters,))

    def absorb_zero_padding(self, pads) -> bool:
        return False   # padding the input of a transposed convolution is not a padding of its own

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
        kernel, bias = self.folded(self.weights_np[0], self.weights_np[1] if self.use_bias else None,
                                   lambda k, scale: k * scale[:, None])
        self.kernel = conv.pack_conv_transpose(kernel, bias, strides, self.upload,
                                               dtype=self.storage_dtype)
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
