"""Keras 3's image preprocessing layers as predict runs them (training=False): Resizing and
CenterCrop resize / crop; the random augmentation layers are the identity then (their
transform_images changes the images only when training). Channels-last, channels_first by
transposing (layers/spatial_utils.py). Inputs must be float32: on integer images Keras casts,
rounds or keeps the dtype, depending on the layer, so those are refused at load."""
from __future__ import annotations

from ...ops import spatial
from ...ops.resize import Resizer, aspect_window, resize
from ...tensors.tensor import view
from ..base import Layer, register
from ..typed_shapes import dtype_of
from ..spatial_utils import SpatialLayer


def _refuse_integer_input(layer: Layer, input_shape) -> None:
    if dtype_of(input_shape) != "float32":
        raise layer.unsupported(f"an {dtype_of(input_shape)} input (only float32 images)")


class _ImageLayer(SpatialLayer):
    """Resizing and CenterCrop: a new image of (height, width); Keras 3 drops masks here."""
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.height, self.width = int(self.option("height")), int(self.option("width"))
        if self.height < 1 or self.width < 1:
            raise self.shape_error(f"height={self.height}, width={self.width}: must be positive.")

    def compute_output_shape(self, input_shape):
        _refuse_integer_input(self, input_shape)
        return super().compute_output_shape(input_shape)

    def channels_last_shape(self, shape):
        return (shape[0], self.height, self.width, shape[-1])


@register("Resizing")
class Resizing(_ImageLayer):
    """ops.image.resize to (height, width) (ops/resize.Resizer): nearest, bilinear, bicubic,
    lanczos3 or lanczos5, antialiased or not, with crop_to_aspect_ratio (the centred window of
    the target's aspect ratio is resized) or pad_to_aspect_ratio (the image padded with
    fill_value towards that ratio is)."""
    shaders = ("resize.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.resizer = Resizer.from_options((self.height, self.width), self.option, self.upload,
                                            self.unsupported)

    def channels_last_shape(self, shape):
        self.resizer.prepare(shape[1], shape[2])       # weight tables uploaded at load
        return super().channels_last_shape(shape)

    def channels_last_call(self, x):
        return self.resizer(x)

    @property
    def drops_nan(self) -> bool:
        return self.resizer.drops_nan


@register("CenterCrop")
class CenterCrop(_ImageLayer):
    """The centred (height, width) window; an image smaller than that along either axis is
    resized as Keras's smart_resize does it (its largest centred window of the target's aspect
    ratio, bilinear, not antialiased)."""
    shaders = ("pad_crop2d.comp", "resize.comp")
    input_spatial = (None, None)     # the (height, width) shape inference saw

    def channels_last_shape(self, shape):
        self.input_spatial = tuple(shape[1:3])
        return super().channels_last_shape(shape)

    @property
    def drops_nan(self) -> bool:
        """Where it resizes: as Resizing's bilinear (cropping keeps every NaN where Keras does)."""
        return not all(size is not None and size >= target for size, target in
                       zip(self.input_spatial, (self.height, self.width)))

    def channels_last_call(self, x):
        _, h, w, _ = x.shape
        dh, dw = h - self.height, w - self.width
        if dh >= 0 and dw >= 0:
            rows, cols = (-(dh // 2), -(dh - dh // 2)), (-(dw // 2), -(dw - dw // 2))
            return spatial.pad_crop2d(x, rows, cols)
        return resize(x, (self.height, self.width), "bilinear", False,
                      aspect_window(h, w, self.height, self.width))


# Keras 3 layers whose inference call returns the images unchanged.
IDENTITY_AT_INFERENCE = (
    "RandomFlip", "RandomRotation", "RandomZoom", "RandomContrast", "RandomTranslation",
    "RandomBrightness", "RandomShear", "RandomPerspective", "RandomElasticTransform",
    "RandomColorJitter", "RandomColorDegeneration", "RandomHue", "RandomSaturation",
    "RandomSharpness", "RandomGrayscale", "RandomInvert", "RandomPosterization", "RandomErasing",
    "RandomGaussianBlur", "MixUp", "CutMix", "AugMix", "RandAugment", "Solarization")


@register(*IDENTITY_AT_INFERENCE)
class RandomAugmentation(Layer):
    """A random augmentation: predict never trains, so the output is the input (a view). Keras
    3 destroys a mask reaching one (supports_masking is False)."""
    mask_behaviour = "drops"
    # Their seed generator's state may be saved as a weight; inference reads none.
    weight_arrays = None

    @classmethod
    def inference_weights(cls, config, weights):
        return []

    def compute_output_shape(self, input_shape):
        _refuse_integer_input(self, input_shape)
        if len(input_shape) not in (3, 4):
            raise self.shape_error(f"expects images of rank 3 or 4. Received input shape "
                                   f"{tuple(input_shape)}.")
        return tuple(input_shape)

    def call(self, inputs, **kwargs):
        return view(inputs, inputs.shape)


@register("RandomCrop")
class RandomCrop(RandomAugmentation):
    """Keras 3's inference call returns the images as they are, whatever their size: its
    transform_images crops only when training (keras-team/keras#21868), although the layer
    declares a (height, width) output. kerasgl gives Keras's answer: the images at their own
    size, which the following layers then see, as they do in Keras's predict. tf.keras (Keras 2
    files) smart-resizes them to (height, width) instead, which no live Keras here can check: a
    Keras 2 file is run only where the input already has that size (the same answer there)."""

    def compute_output_shape(self, input_shape):
        shape = super().compute_output_shape(input_shape)
        if self.keras_major == 2:
            channels_first = (self.option("data_format") or "channels_last") == "channels_first"
            spatial_dims = tuple(shape[-2:] if channels_first else shape[-3:-1])
            target = (int(self.option("height")), int(self.option("width")))
            if spatial_dims != target:
                raise self.unsupported(
                    f"an input of spatial size {spatial_dims} other than the crop size {target} "
                    "in a Keras 2 file (tf.keras smart-resizes it at inference)")
        return shape
