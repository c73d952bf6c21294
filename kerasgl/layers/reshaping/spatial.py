"""Spatial reshaping layers: ZeroPadding1D/2D, Cropping1D/2D, UpSampling1D/2D (nearest, bilinear),
channels-last (channels_first by transposing). 1D layers run as 2D over one row."""
from __future__ import annotations

from ...ops import spatial
from ..base import register
from ..spatial_utils import SpatialLayer, int_tuple, pair_tuple


class _PadCrop(SpatialLayer):
    shaders = ("pad_crop2d.comp",)
    sign = 1          # +1 pads, -1 crops
    key = "padding"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.amounts = pair_tuple(self.option(self.key, 1 if self.sign > 0 else 0), self.spatial_rank)

    def zero_padding(self):
        return self.amounts if self.sign > 0 and not self.channels_first else None

    def channels_last_shape(self, shape):
        spatial_out = []
        for size, (before, after) in zip(shape[1:-1], self.amounts):
            out = None if size is None else size + self.sign * (before + after)
            if out is not None and out <= 0:
                raise self.shape_error(f"{self.key} {self.amounts} leaves nothing of input shape "
                                       f"{tuple(shape)}.")
            spatial_out.append(out)
        return (shape[0],) + tuple(spatial_out) + (shape[-1],)

    def channels_last_call(self, x):
        self.channels_last_shape(x.shape)
        signed = [(self.sign * a, self.sign * b) for a, b in self.amounts]
        rows, cols = ((0, 0), signed[0]) if self.spatial_rank == 1 else signed
        return self.run_2d(x, lambda x4: spatial.pad_crop2d(x4, rows, cols))


@register("ZeroPadding2D")
class ZeroPadding2D(_PadCrop):
    spatial_rank, sign, key = 2, 1, "padding"


@register("ZeroPadding1D")
class ZeroPadding1D(_PadCrop):
    spatial_rank, sign, key = 1, 1, "padding"


@register("Cropping2D")
class Cropping2D(_PadCrop):
    spatial_rank, sign, key = 2, -1, "cropping"


@register("Cropping1D")
class Cropping1D(_PadCrop):
    spatial_rank, sign, key = 1, -1, "cropping"


class _UpSampling(SpatialLayer):
    shaders = ("upsample2d.comp",)
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.size = int_tuple(self.option("size", 2), self.spatial_rank, "size")
        self.interpolation = str(self.option("interpolation", "nearest")).lower()
        if self.interpolation not in spatial.INTERPOLATIONS:
            raise self.unsupported(f"interpolation={self.interpolation!r}")

    def channels_last_shape(self, shape):
        return ((shape[0],) + tuple(None if s is None else s * f for s, f in zip(shape[1:-1], self.size))
                + (shape[-1],))

    def channels_last_call(self, x):
        factors = self.size if self.spatial_rank == 2 else (1,) + self.size
        return self.run_2d(x, lambda x4: spatial.upsample2d(x4, factors, self.interpolation))


@register("UpSampling2D")
class UpSampling2D(_UpSampling):
    spatial_rank = 2


@register("UpSampling1D")
class UpSampling1D(_UpSampling):
    spatial_rank = 1
