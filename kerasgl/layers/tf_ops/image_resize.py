"""tf.image.resize (every method, antialias, preserve_aspect_ratio) and the tf.compat.v1 resizers
(image.resize_images, resize_bilinear / resize_nearest_neighbor / resize_bicubic with
align_corners / half_pixel_centers, resize_area), on float32 [batch, height, width, channels]
images whose height, width and target size are known at load.

Each method's taps are TensorFlow's own (resize_weights.py), computed once at load per axis and
uploaded; a resize is then two passes of ops/resample_axis.py (rows, then columns). What each
spelling runs is as image_ops_impl.py dispatches it: tf.image.resize's bilinear and bicubic are
the half-pixel legacy kernels unless antialias is set, when they (and lanczos3 / lanczos5 /
gaussian / mitchellcubic always) are scale_and_translate with the triangle / keyscubic / named
kernel; nearest ignores antialias and area always averages; tf.compat.v1.image.resize_images
returns an image already of the target size unchanged.
"""
from __future__ import annotations

import numpy as np

from ...ops import typed as typed_ops
from ...ops.resample_axis import resample_axis
from . import resize_weights
from .functions import TFFunction, register

SCALE_AND_TRANSLATE = ("lanczos3", "lanczos5", "gaussian", "mitchellcubic")
V2_METHODS = ("bilinear", "nearest", "bicubic", "area") + SCALE_AND_TRANSLATE
# tf.compat.v1.image.ResizeMethod: BILINEAR = 0, NEAREST_NEIGHBOR = 1, BICUBIC = 2, AREA = 3.
V1_METHODS = {0: "bilinear", 1: "nearest", 2: "bicubic", 3: "area", "bilinear": "bilinear",
              "nearest": "nearest", "bicubic": "bicubic", "area": "area"}


class Resize(TFFunction):
    """The shared part: `taps(args, in_size, out_size, axis_factor)` per axis, from the method."""
    shaders = ("resample_axis.comp",)
    skip_same_size = False          # v1 resize_images hands back an image already of the size

    def plan(self, args):
        x = args.tensor("images")
        if x.ndim != 4 or x.dtype != "float32" or None in x.shape[1:3]:
            raise self.unsupported(f"images of shape {x.shape} and dtype {x.dtype} (float32 "
                                   "[batch, height, width, channels] with a known height and width)")
        h, w = x.shape[1:3]
        size = args.static("size")
        if not isinstance(size, list) or len(size) != 2 \
                or any(not isinstance(v, int) or v < 1 for v in size):
            raise self.shape_error(f"size {size!r} is not two positive sizes.")
        if args.get("preserve_aspect_ratio", False):
            size = _aspect_preserving(h, w, size)
        self.copy = self.skip_same_size and (h, w) == tuple(size)
        if not self.copy:
            factor = rows_area_factor(h, w, size, self.align(args))
            self.passes = [self._pass(args, 1, h, size[0], factor),
                           self._pass(args, 2, w, size[1], np.float32(1))]
        return (x.shape[0], size[0], size[1], x.shape[3])

    def _pass(self, args, axis: int, n_in: int, n_out: int, area_factor):
        taps = self.taps(args, n_in, n_out, area_factor)
        return (axis, self.layer.upload(taps.starts, "int32", f"starts{axis}"),
                self.layer.upload(taps.weights, "float32", f"taps{axis}"))

    def align(self, args) -> bool:
        return bool(args.get("align_corners", False))

    def taps(self, args, n_in: int, n_out: int, area_factor):
        raise NotImplementedError

    def run(self, args):
        x = args.tensor("images")
        if self.copy:
            return typed_ops.copy(x)
        for axis, starts, weights in self.passes:
            x = resample_axis(x, axis, starts, weights)
        return x


def _aspect_preserving(h: int, w: int, size) -> list:
    """_resize_images_common's preserve_aspect_ratio: the scale of the tighter axis, sizes
    rounded half to even (tf.math.round), in float32."""
    f = np.float32
    factor = min(f(size[0]) / f(h), f(size[1]) / f(w))
    return [int(np.rint(f(factor * f(h)))), int(np.rint(f(factor * f(w))))]


def _legacy(method: str, n_in: int, n_out: int, align: bool, half_pixel: bool, area_factor):
    if method == "area":
        return resize_weights.area(n_in, n_out, align, area_factor)
    return getattr(resize_weights, method)(n_in, n_out, align, half_pixel)


class ResizeV2(Resize):
    """tf.image.resize."""
    params = ("images", "size", "method", "preserve_aspect_ratio", "antialias", "name")

    def plan(self, args):
        self.method = str(args.get("method", "bilinear")).lower()
        if self.method not in V2_METHODS:
            raise self.unsupported(f"method={self.method!r}")
        return super().plan(args)

    def align(self, args) -> bool:
        return False

    def taps(self, args, n_in, n_out, area_factor):
        return resize_taps(self.method, bool(args.get("antialias", False)), n_in, n_out,
                           area_factor)


def resize_taps(method: str, antialias: bool, n_in: int, n_out: int, area_factor):
    """One axis's taps of tf.image.resize(method, antialias) (tf-keras's UpSampling2D runs it with
    antialias=False for its other interpolations): scale_and_translate's kernels, or the legacy
    half-pixel ones, as image_ops_impl.py dispatches them."""
    if method in SCALE_AND_TRANSLATE or (antialias and method in ("bilinear", "bicubic")):
        kernel = {"bilinear": "triangle", "bicubic": "keyscubic"}.get(method, method)
        return resize_weights.scale_and_translate(kernel, n_in, n_out, antialias)
    return _legacy(method, n_in, n_out, False, method != "area", area_factor)


def rows_area_factor(h: int, w: int, size, align_corners: bool = False) -> np.float32:
    """resize_area's 1 / (height_scale * width_scale), all of it on the rows' taps."""
    scales = [resize_weights.resize_scale(n, m, align_corners)
              for n, m in ((h, size[0]), (w, size[1]))]
    return np.float32(1.0 / float(np.float32(scales[0] * scales[1])))


register(ResizeV2, ["image.resize"])


class ResizeImagesV1(Resize):
    """tf.compat.v1.image.resize_images (and tf.compat.v1.image.resize)."""
    params = ("images", "size", "method", "align_corners", "preserve_aspect_ratio", "name")
    skip_same_size = True

    def plan(self, args):
        method = args.get("method", 0)
        self.method = V1_METHODS.get(method.lower() if isinstance(method, str) else method)
        if self.method is None:
            raise self.unsupported(f"method={method!r}")
        return super().plan(args)

    def taps(self, args, n_in, n_out, area_factor):
        return _legacy(self.method, n_in, n_out, self.align(args), False, area_factor)


register(ResizeImagesV1, ["compat.v1.image.resize_images", "compat.v1.image.resize"])


class ResizeOp(Resize):
    """tf.compat.v1.image.resize_bilinear / resize_nearest_neighbor / resize_bicubic /
    resize_area (fixed `method`): the kernels themselves."""
    params = ("images", "size", "align_corners", "name", "half_pixel_centers")

    def plan(self, args):
        if self.align(args) and args.get("half_pixel_centers", False):
            raise self.shape_error("align_corners and half_pixel_centers cannot both be set.")
        return super().plan(args)

    def taps(self, args, n_in, n_out, area_factor):
        return _legacy(self.fixed["method"], n_in, n_out, self.align(args),
                       bool(args.get("half_pixel_centers", False)), area_factor)


register(ResizeOp, {"compat.v1.image.resize_bilinear": {"method": "bilinear"},
                    "compat.v1.image.resize_nearest_neighbor": {"method": "nearest"},
                    "compat.v1.image.resize_bicubic": {"method": "bicubic"},
                    "compat.v1.image.resize_area": {"method": "area"}})
