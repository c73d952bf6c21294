"""Spatial reshaping layers: ZeroPadding1D/2D, Cropping1D/2D, UpSampling1D/2D, channels-last
(channels_first by transposing). 1D layers run as 2D over one row.

UpSampling2D's nearest and bilinear run on upsample2d.comp; its other interpolations resize the
image as the Keras that wrote the file does: tf-keras (Keras 2) with tf.image.resize
(antialias=False: area, bicubic, gaussian, lanczos3, lanczos5, mitchellcubic, TensorFlow's taps),
Keras 3 with ops.image.resize (bicubic, lanczos3, lanczos5, jax's taps: ops/resize.Resizer).
Their weight tables depend on the image's size, known at load."""
from __future__ import annotations

from ...ops import spatial
from ...ops.resample_axis import resample_axis
from ...ops.resize import Resizer
from ...tensors import ownership
from ..base import register
from ..spatial_utils import SpatialLayer, int_tuple, pair_tuple
from ..tf_ops.image_resize import V2_METHODS, resize_taps, rows_area_factor

# Keras 3's UpSampling2D interpolations beyond upsample2d.comp's (jax's resize kernels).
KERAS3_RESIZED = ("bicubic", "lanczos3", "lanczos5")


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
    shaders = ("upsample2d.comp", "resample_axis.comp", "resize.comp")
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.size = int_tuple(self.option("size", 2), self.spatial_rank, "size")
        self.interpolation = str(self.option("interpolation", "nearest")).lower()
        self.resized = self.interpolation not in spatial.INTERPOLATIONS
        resizable = V2_METHODS if keras_major == 2 else KERAS3_RESIZED
        if self.resized and (self.spatial_rank != 2 or self.interpolation not in resizable):
            raise self.unsupported(f"interpolation={self.interpolation!r}")
        self.passes = None          # Keras 2: TensorFlow's taps per axis, made at load
        self.resizer = None         # Keras 3: jax's, through ops.image.resize's Resizer

    def channels_last_shape(self, shape):
        out = ((shape[0],) + tuple(None if s is None else s * f for s, f in zip(shape[1:-1], self.size))
               + (shape[-1],))
        if self.resized:
            self._prepare_resize(shape[1], shape[2], out[1:3])
        return out

    def _prepare_resize(self, h, w, size) -> None:
        if h is None or w is None:
            raise self.unsupported(f"interpolation={self.interpolation!r} on images of unknown "
                                   "height or width (its weights depend on them)")
        if self.keras_major != 2:
            self.resizer = Resizer(size, self.interpolation, upload=self.upload)
            self.resizer.prepare(h, w)
            return
        factor = rows_area_factor(h, w, size)
        self.passes = [
            (axis, self.upload(taps.starts, "int32", f"starts{axis}"),
             self.upload(taps.weights, "float32", f"taps{axis}"))
            for axis, taps in ((1, resize_taps(self.interpolation, False, h, size[0], factor)),
                               (2, resize_taps(self.interpolation, False, w, size[1], 1.0)))]

    def channels_last_call(self, x):
        if self.resizer is not None:
            return self.resizer(x)
        if self.passes is not None:
            return ownership.tidy.run(self._resample, x)
        factors = self.size if self.spatial_rank == 2 else (1,) + self.size
        return self.run_2d(x, lambda x4: spatial.upsample2d(x4, factors, self.interpolation))

    def _resample(self, x):
        for axis, starts, weights in self.passes:
            x = resample_axis(x, axis, starts, weights)
        return x

    @property
    def drops_nan(self) -> bool:
        # jax's resize spreads a NaN over its whole channel; these kernels to its neighbours.
        return self.resizer is not None and self.resizer.drops_nan


@register("UpSampling2D")
class UpSampling2D(_UpSampling):
    spatial_rank = 2


@register("UpSampling1D")
class UpSampling1D(_UpSampling):
    spatial_rank = 1
