"""keras.ops.image operations that sample images at computed coordinates, as Keras 3 computes
them on JAX (jax.scipy.ndimage.map_coordinates, nearest or bilinear): affine_transform (every
fill mode) and perspective_transform (constant fill); channels-last or channels_first, batches
of float32 images. map_coordinates, scale_and_translate and the random elastic transform are
refused at load."""
from __future__ import annotations

from ...layers.refusals import refuse_ops
from ...ops import image_ops
from ..node import _shape, register_op
from .operations import ImageOp


@register_op("AffineTransform")
class AffineTransformOp(ImageOp):
    """ops.image.affine_transform(images, transform): nearest or bilinear sampling (as
    jax.scipy.ndimage.map_coordinates), fill modes constant, nearest, wrap, mirror, reflect."""
    params = ("images", "transform")
    shaders = ("affine_transform.comp",)
    drops_nan = True       # a NaN weight (transform) or pixel is not spread as jnp's sums would

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.interpolation = str(self.options.get("interpolation", "bilinear")).lower()
        if self.interpolation not in ("nearest", "bilinear"):
            raise self.unsupported(f"interpolation={self.interpolation!r}")
        self.fill_mode = str(self.options.get("fill_mode", "constant")).lower()
        if self.fill_mode not in image_ops.FILL_MODES:
            raise self.unsupported(f"fill_mode={self.fill_mode!r}")
        self.fill_value = float(self.options.get("fill_value", 0.0))

    def nhwc_shape(self, shape):
        if self.fill_mode == "mirror" and 1 in shape[1:3]:
            raise self.unsupported("fill_mode='mirror' on images of height or width 1")
        return shape

    def output_shape(self, bound):
        transform = _shape(bound["transform"])
        if len(transform) == 1:
            raise self.unsupported("a transform of rank 1 (Keras 3 applies one only to a batch "
                                   "of one image, and fails on larger batches)")
        if len(transform) != 2 or transform[-1] not in (8, None):
            raise self.shape_error(f"expects a transform of shape [batch, 8]. Received "
                                   f"{list(transform)}.")
        return super().output_shape(bound)

    def run_nhwc(self, x):
        return image_ops.affine_transform(x, self._transform, self.interpolation,
                                          self.fill_mode, self.fill_value)

    def run(self, bound):
        self._transform = bound["transform"]
        try:
            return super().run(bound)
        finally:
            self._transform = None


@register_op("PerspectiveTransform")
class PerspectiveTransformOp(ImageOp):
    """ops.image.perspective_transform(images, start_points, end_points): per image, the
    homography Keras solves from the points ([batch, 4, 2]; one set of [4, 2] for a batch is
    the batch axis to Keras and refused), nearest or bilinear sampling, constant fill."""
    params = ("images", "start_points", "end_points")
    shaders = ("homography.comp", "affine_transform.comp")
    drops_nan = True

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.interpolation = str(self.options.get("interpolation", "bilinear")).lower()
        if self.interpolation not in ("nearest", "bilinear"):
            raise self.unsupported(f"interpolation={self.interpolation!r}")
        self.fill_value = float(self.options.get("fill_value", 0.0))

    def output_shape(self, bound):
        for key in ("start_points", "end_points"):
            points = _shape(bound[key])
            if len(points) == 2:
                raise self.unsupported(
                    f"{key} of rank 2 (Keras takes them for one image's points, whose first "
                    "axis is the model's batch)")
            if len(points) != 3 or points[1:] != (4, 2):
                raise self.shape_error(f"expects {key} of shape [batch, 4, 2]. Received "
                                       f"{list(points)}.")
        return super().output_shape(bound)

    def run_nhwc(self, x):
        return image_ops.perspective_transform(x, self._points[0], self._points[1],
                                               self.interpolation, self.fill_value)

    def run(self, bound):
        self._points = (bound["start_points"], bound["end_points"])
        try:
            return super().run(bound)
        finally:
            self._points = None


refuse_ops({
    "MapCoordinates": "its coordinates' first axis indexes the axes of the input, which in a "
                      "model is the batch axis: each sample's result would depend on the rest "
                      "of its batch",
    "ScaleAndTranslate": "resizes with kernels and translations jax.image.scale_and_translate "
                         "computes, which kerasgl has no kernel for",
    "ElasticTransform": "draws random displacements (without a seed, new ones at every call, even "
                        "at inference; with one, from jax's random generator, which kerasgl does "
                        "not reproduce)",
})
