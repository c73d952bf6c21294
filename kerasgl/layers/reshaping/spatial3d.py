"""3D spatial reshaping layers: ZeroPadding3D, Cropping3D, UpSampling3D (Keras's repeat, i.e.
nearest), channels-last (channels_first by transposing). Options and shape rules are the 1D/2D
layers' of reshaping.py; the kernels are the 3D ones of ops/spatial3d.py."""
from __future__ import annotations

from ...ops import spatial3d
from ..base import register
from .spatial import _PadCrop, _UpSampling


class _PadCrop3D(_PadCrop):
    shaders = ("pad_crop3d.comp",)
    spatial_rank = 3

    def channels_last_call(self, x):
        self.channels_last_shape(x.shape)
        planes, rows, cols = [(self.sign * a, self.sign * b) for a, b in self.amounts]
        return spatial3d.pad_crop3d(x, planes, rows, cols)


@register("ZeroPadding3D")
class ZeroPadding3D(_PadCrop3D):
    sign, key = 1, "padding"


@register("Cropping3D")
class Cropping3D(_PadCrop3D):
    sign, key = -1, "cropping"


@register("UpSampling3D")
class UpSampling3D(_UpSampling):
    """Keras's UpSampling3D has no interpolation option: it repeats (nearest). A config naming
    another interpolation is refused rather than run as nearest."""
    shaders = ("upsample3d.comp",)
    spatial_rank = 3

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if self.interpolation != "nearest":
            raise self.unsupported(f"interpolation={self.interpolation!r}")

    def channels_last_call(self, x):
        return spatial3d.upsample3d(x, self.size)
