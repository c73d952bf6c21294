"""Pooling layers: Max/AveragePooling1D/2D and GlobalMax/GlobalAveragePooling1D/2D (keepdims),
channels-last (channels_first by transposing). 1D pooling runs as 2D over one row."""
from __future__ import annotations

from ...ops import layout, masking, pool
from ...tensors import ownership
from ...tensors.tensor import view
from .. import config_values
from ..base import register
from ..spatial_utils import SpatialLayer, as_rows, from_rows


class _Pool(SpatialLayer):
    shaders = ("pool2d.comp",)
    mode = "max"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        r = self.spatial_rank
        # Keras refuses a pool_size of 0; a stride of 0 it takes but cannot run. Keras 3's
        # AveragePooling has no default pool_size (its MaxPooling and Keras 2's have 2).
        default = 2 if self.mode == "max" or keras_major == 2 else config_values.REQUIRED
        self.pool_size = config_values.int_tuple(self, "pool_size", r, default)
        self.strides = (self.pool_size if self.option("strides") is None
                        else config_values.int_tuple(self, "strides", r))
        self.padding = config_values.choice(self, "padding", ("valid", "same"), "valid")
        self._zero_padding = ((0, 0),) * r     # an absorbed ZeroPadding's (before, after) per axis

    def pooling(self):
        if self.channels_first:
            return None
        return (self.mode, tuple(self.pool_size), tuple(self.strides), self.padding)

    def absorb_zero_padding(self, pads) -> bool:
        """Take over a ZeroPadding applied right before (compiler/fusion.py): the pooling reads
        its zeros itself. Exact for padding="valid" (the windows cover padded cells the same)."""
        if self.channels_first or self.padding != "valid" or any(map(any, self._zero_padding)) \
                or len(pads) != self.spatial_rank:
            return False
        self._zero_padding = tuple((int(a), int(b)) for a, b in pads)
        return True

    def channels_last_shape(self, shape):
        spatial = tuple(None if size is None else pool.pool_padding(size + a + b, p, s, self.padding)[0]
                        for size, p, s, (a, b) in zip(shape[1:-1], self.pool_size, self.strides,
                                                      self._zero_padding))
        if any(size is not None and size <= 0 for size in spatial):
            raise self.shape_error(f"pool_size {self.pool_size} does not fit input shape {tuple(shape)}.")
        return (shape[0],) + spatial + (shape[-1],)

    def channels_last_call(self, x):
        if self.spatial_rank == 2:
            return pool.pool2d(x, self.mode, self.pool_size, self.strides, self.padding,
                               self._zero_padding)
        return ownership.tidy.run(lambda: from_rows(pool.pool2d(
            as_rows(x), self.mode, (1,) + self.pool_size, (1,) + self.strides, self.padding,
            ((0, 0),) + self._zero_padding)))


@register("MaxPooling2D", "MaxPool2D")
class MaxPooling2D(_Pool):
    spatial_rank, mode = 2, "max"


@register("MaxPooling1D", "MaxPool1D")
class MaxPooling1D(_Pool):
    spatial_rank, mode = 1, "max"


@register("AveragePooling2D", "AvgPool2D")
class AveragePooling2D(_Pool):
    spatial_rank, mode = 2, "avg"


@register("AveragePooling1D", "AvgPool1D")
class AveragePooling1D(_Pool):
    spatial_rank, mode = 1, "avg"


class _GlobalPool(SpatialLayer):
    """Max or mean over every spatial position; keepdims keeps them as size-1 axes, in the
    layer's own data format."""
    shaders = ("global_pool.comp",)
    moves_channels_back = False
    mode = "max"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.keepdims = config_values.flag(self, "keepdims", False)

    def _kept_shape(self, batch, channels):
        ones = (1,) * self.spatial_rank
        if not self.keepdims:
            return (batch, channels)
        return (batch, channels) + ones if self.channels_first else (batch,) + ones + (channels,)

    def channels_last_shape(self, shape):
        return self._kept_shape(shape[0], shape[-1])

    def channels_last_call(self, x):
        return ownership.tidy.run(
            lambda: self._in_kept_shape(pool.global_pool(x, self.mode), x.shape[-1]))

    def _in_kept_shape(self, out, channels):
        """out (batch, channels), as _kept_shape wants it (a view when keepdims adds axes: the
        caller's tidy scope frees out)."""
        shape = self._kept_shape(out.shape[0], channels)
        return out if shape == out.shape else view(out, shape)


@register("GlobalMaxPooling2D", "GlobalMaxPool2D")
class GlobalMaxPooling2D(_GlobalPool):
    spatial_rank, mode = 2, "max"


@register("GlobalMaxPooling1D", "GlobalMaxPool1D")
class GlobalMaxPooling1D(_GlobalPool):
    spatial_rank, mode = 1, "max"


@register("GlobalAveragePooling2D", "GlobalAvgPool2D")
class GlobalAveragePooling2D(_GlobalPool):
    spatial_rank, mode = 2, "avg"


@register("GlobalAveragePooling1D", "GlobalAvgPool1D")
class GlobalAveragePooling1D(_GlobalPool):
    spatial_rank, mode = 1, "avg"
    mask_behaviour = "consumes"       # the mean over the kept steps; no time axis left to mask

    def masked_outputs(self) -> tuple:
        return ()

    def call(self, inputs, mask=None, **kwargs):
        """With a (batch, steps) mask (Keras passes one from Embedding(mask_zero=True) or
        Masking): the mean over the kept steps only."""
        if mask is None:
            return super().call(inputs)
        self.check_rank(inputs.shape)

        def compute():
            x = layout.transpose(inputs, self._last_perm()) if self.channels_first else inputs
            return self._in_kept_shape(masking.masked_mean_over_time(x, mask, self.keepdims),
                                       x.shape[-1])
        return ownership.tidy.run(compute)
