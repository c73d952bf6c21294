"""Keras 3's image adjustment layers as predict runs them (training=False): AutoContrast and
ContrastLimitedAdaptiveHistogramEqualization change the images at inference too; Equalization
equalises only when training and MaxNumBoundingBoxes changes only bounding boxes, so both are
the identity on images then. float32 images only (on integer images Keras rounds or casts)."""
from __future__ import annotations

from ...ops import image_ops, layout
from ...tensors import ownership
from ..base import register
from .image_preprocessing import RandomAugmentation


def _value_range(layer, default=(0, 255), sort=True):
    value = layer.option("value_range", default)
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise layer.unsupported(f"value_range={value!r} (expects two numbers)")
    low, high = (float(v) for v in value)
    return tuple(sorted((low, high))) if sort else (low, high)


class _Batched(RandomAugmentation):
    """A layer over a batch of images (rank 4), whose output has its shape. Keras takes a rank-3
    tensor for one image, which in a model is the whole batch (its first axis the image's rows):
    each sample's result would depend on the others in its batch, so that is refused."""

    def compute_output_shape(self, input_shape):
        shape = super().compute_output_shape(input_shape)
        if len(shape) != 4:
            raise self.unsupported(
                f"an input of rank {len(shape)} (Keras takes it for one image whose rows are the "
                "batch, so each sample's result would depend on the rest of its batch)")
        return shape

    def call(self, inputs, **kwargs):
        return self.run(inputs)

    def run(self, x):
        raise NotImplementedError


@register("AutoContrast")
class AutoContrast(_Batched):
    """Each image's channels stretched over value_range: (x - min) * 255 / (max - min) in
    [0, 255] terms, clipped; Keras takes min and max over axes 1 and 2 of the batch whatever the
    data_format (for channels_first: per column), and keeps a channel whose result is NaN (a
    constant or non-finite one) as it was. Keras 3 drops a mask here."""
    shaders = ("reduce.comp", "auto_contrast.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.value_range = _value_range(self)

    def run(self, x):
        return image_ops.auto_contrast(x, self.value_range)


@register("ContrastLimitedAdaptiveHistogramEqualization")
class CLAHE(_Batched):
    """Keras 3's CLAHE: 256-bin histograms per tile of tile_grid_size, clipped at clip_limit
    (0: not clipped), whose normalised CDFs map each pixel's bin, interpolated between the four
    nearest tiles (ops/image_ops.clahe). channels_first by transposing. Keras 3 drops a mask."""
    shaders = ("clahe_tiles.comp", "clahe_apply.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.value_range = _value_range(self, sort=False)
        self.clip_limit = float(self.option("clip_limit", 4.0))
        grid = self.option("tile_grid_size", (8, 8))
        grid = (grid, grid) if isinstance(grid, int) else tuple(grid)
        if len(grid) != 2 or min(int(g) for g in grid) < 1:
            raise self.unsupported(f"tile_grid_size={grid!r}")
        self.grid = tuple(int(g) for g in grid)
        data_format = self.option("data_format") or "channels_last"
        if data_format not in ("channels_last", "channels_first"):
            raise self.unsupported(f"data_format={data_format!r}")
        self.channels_first = data_format == "channels_first"

    def run(self, x):
        if not self.channels_first:
            return image_ops.clahe(x, self.grid, self.clip_limit, self.value_range)

        def compute():
            moved = layout.transpose(x, (0, 2, 3, 1))
            result = image_ops.clahe(moved, self.grid, self.clip_limit, self.value_range)
            return layout.transpose(result, (0, 3, 1, 2))
        return ownership.tidy.run(compute)


@register("Equalization", "MaxNumBoundingBoxes")
class IdentityOnImages(RandomAugmentation):
    """Equalization equalises histograms only when training (its transform_images returns the
    images unchanged otherwise); MaxNumBoundingBoxes pads or cuts bounding boxes and returns
    images unchanged. predict never trains, so on images both are the identity (a view). Keras 3
    drops a mask here."""
