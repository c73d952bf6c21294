"""3D pooling layers: Max/AveragePooling3D (pool sizes, strides, valid/same) and
GlobalMax/GlobalAveragePooling3D (keepdims), channels-last (channels_first by transposing).
The options and shape rules are the 1D/2D layers' of pooling.py; only the kernel differs."""
from __future__ import annotations

from ...ops import pool3d
from ..base import register
from .pooling import _GlobalPool, _Pool


class _Pool3D(_Pool):
    shaders = ("pool3d.comp",)
    spatial_rank = 3

    def channels_last_call(self, x):
        return pool3d.pool3d(x, self.mode, self.pool_size, self.strides, self.padding)


@register("MaxPooling3D", "MaxPool3D")
class MaxPooling3D(_Pool3D):
    mode = "max"


@register("AveragePooling3D", "AvgPool3D")
class AveragePooling3D(_Pool3D):
    mode = "avg"


@register("GlobalMaxPooling3D", "GlobalMaxPool3D")
class GlobalMaxPooling3D(_GlobalPool):
    spatial_rank, mode = 3, "max"


@register("GlobalAveragePooling3D", "GlobalAvgPool3D")
class GlobalAveragePooling3D(_GlobalPool):
    spatial_rank, mode = 3, "avg"
