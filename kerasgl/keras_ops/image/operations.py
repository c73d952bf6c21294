"""keras.ops.image operations recorded in Keras 3 graphs (module keras.src.ops.image): resizing,
cropping and padding, colour conversions, Gaussian blur, Sobel edges, patch extraction and SSIM,
as Keras computes them on JAX (the sampling ones: image/geometric.py). Images of rank 4
(a batch; rank 3, one image to Keras, for the per-pixel colour conversions only), channels_last
or channels_first (transposed to channels-last and back), float32."""
from __future__ import annotations

import numpy as np

from ...ops import conv, elementwise, image_ops, layout, reduce, spatial
from ...ops.resize import Resizer
from ...tensors import ownership
from ...tensors.tensor import view
from ..node import OpNode, _shape, register_op


class ImageOp(OpNode):
    """An op over images: run_nhwc(x) gets a channels-last batch (one image seen as a batch of
    one) and nhwc_shape(shape) its output's shape; the result goes back to the input's layout."""
    params = ("images",)
    input_dtypes = ("float32",)
    # Where rows or columns of the image mix (or their count changes), a rank-3 input (one image
    # to Keras, whose rows are the model's batch) is refused; per-pixel ops take it.
    batched_only = True

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        data_format = self.options.get("data_format") or "channels_last"
        if data_format not in ("channels_last", "channels_first"):
            raise self.unsupported(f"data_format={data_format!r}")
        self.channels_first = data_format == "channels_first"

    def _check(self, shape):
        if len(shape) == 3 and self.batched_only:
            raise self.unsupported(
                "images of rank 3 (Keras takes them for one image whose rows are the batch, so "
                "each sample's result would depend on the rest of its batch)")
        if len(shape) not in (3, 4):
            raise self.shape_error(f"expects images of rank 3 or 4. Received shape {list(shape)}.")

    def to_nhwc(self, shape):
        shape = tuple(shape) if len(shape) == 4 else (1,) + tuple(shape)
        return (shape[0], shape[2], shape[3], shape[1]) if self.channels_first else shape

    def from_nhwc(self, shape, rank):
        if self.channels_first:
            shape = (shape[0], shape[3], shape[1], shape[2]) + tuple(shape[4:])
        return tuple(shape) if rank == 4 else tuple(shape[1:])

    def output_shape(self, bound):
        shape = _shape(bound["images"])
        self._check(shape)
        return self.from_nhwc(self.nhwc_shape(self.to_nhwc(shape)), len(shape))

    def run(self, bound):
        x = bound["images"]
        self._check(x.shape)

        def compute():
            x4 = x if x.ndim == 4 else view(x, (1,) + tuple(x.shape))
            if self.channels_first:
                x4 = layout.transpose(x4, (0, 2, 3, 1))
            y = self.run_nhwc(x4)
            if self.channels_first:
                y = layout.transpose(y, (0, 3, 1, 2) + tuple(range(4, y.ndim)))
            return y if x.ndim == 4 else view(y, y.shape[1:])
        return ownership.tidy.run(compute)

    def nhwc_shape(self, shape):
        return shape

    def run_nhwc(self, x):
        raise NotImplementedError


@register_op("Resize")
class ResizeOp(ImageOp):
    """ops.image.resize: as the Resizing layer (ops/resize.Resizer: nearest, bilinear, bicubic,
    lanczos3 or lanczos5, antialias, crop_to_aspect_ratio, pad_to_aspect_ratio with a constant
    fill)."""
    shaders = ("resize.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        size = tuple(int(s) for s in self.options.get("size"))
        if len(size) != 2 or min(size) < 1:
            raise self.shape_error(f"size={list(size)}: expects two positive sizes.")
        self.resizer = Resizer.from_options(size, self.options.get, self.upload, self.unsupported)

    @property
    def drops_nan(self) -> bool:
        return self.resizer.drops_nan

    def nhwc_shape(self, shape):
        self.resizer.prepare(shape[1], shape[2])       # weight tables uploaded at load
        return (shape[0],) + self.resizer.size + (shape[3],)

    def run_nhwc(self, x):
        return self.resizer(x)


def _amount(options, key):
    value = options.get(key)
    if value is not None and int(value) < 0:
        raise ValueError(f"{key} must be >= 0. Received: {key}={value}")
    return None if value is None else int(value)


@register_op("PadImages", "CropImages")
class PadCropImagesOp(ImageOp):
    """ops.image.pad_images (zeros) / crop_images: two of (top, bottom, target height) and two
    of (left, right, target width) given, the third inferred as Keras does."""
    shaders = ("pad_crop2d.comp",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.word = "padding" if self.class_name == "PadImages" else "cropping"
        keys = ("top", "bottom", "left", "right")
        self.amounts = {k: _amount(self.options, f"{k}_{self.word}") for k in keys}
        self.target = {k: _amount(self.options, f"target_{k}") for k in ("height", "width")}
        for a, b, t in (("top", "bottom", "height"), ("left", "right", "width")):
            if [self.amounts[a], self.amounts[b], self.target[t]].count(None) != 1:
                raise self.shape_error(f"must specify exactly two of {a}_{self.word}, "
                                       f"{b}_{self.word}, target_{t}.")

    def _sides(self, size, before, after, target, what):
        pad = self.word == "padding"
        if before is None:
            before = target - after - size if pad else size - target - after
        if after is None:
            after = target - before - size if pad else size - target - before
        if before < 0 or after < 0 or (not pad and before + after >= size):
            raise self.shape_error(f"{self.word} {[before, after]} does not fit {what} {size}.")
        return (before, after) if pad else (-before, -after)

    def _geometry(self, shape):
        _, h, w, _ = shape
        a, t = self.amounts, self.target
        return (self._sides(h, a["top"], a["bottom"], t["height"], "height"),
                self._sides(w, a["left"], a["right"], t["width"], "width"))

    def nhwc_shape(self, shape):
        rows, cols = self._geometry(shape)
        return (shape[0], shape[1] + sum(rows), shape[2] + sum(cols), shape[3])

    def run_nhwc(self, x):
        rows, cols = self._geometry(x.shape)
        return spatial.pad_crop2d(x, rows, cols)


@register_op("RGBToGrayscale", "RGBToHSV", "HSVToRGB")
class ColorOp(ImageOp):
    """Colour conversions of 3-channel images (grayscale of 1-channel images: the images)."""
    shaders = ("image_color.comp",)
    batched_only = False
    _MODES = {"RGBToGrayscale": "gray", "RGBToHSV": "rgb_to_hsv", "HSVToRGB": "hsv_to_rgb"}

    @property
    def drops_nan(self) -> bool:
        """HSV's max / min / clamp are GLSL's, which may drop a NaN that jnp keeps."""
        return self.class_name != "RGBToGrayscale"

    def nhwc_shape(self, shape):
        gray = self.class_name == "RGBToGrayscale"
        if shape[3] not in ((1, 3) if gray else (3,)):
            raise self.shape_error(f"expects {'1 or ' if gray else ''}3 channels. Received "
                                   f"{shape[3]} channels.")
        return shape[:3] + ((1,) if gray else (3,))

    def run_nhwc(self, x):
        if x.shape[3] == 1:
            return view(x, x.shape)
        return image_ops.color(x, self._MODES[self.class_name])


class _DepthwiseImageOp(ImageOp):
    """A fixed depthwise filter, SAME (zero) padding, stride 1: kernel(channels) ->
    [kh, kw, channels, multiplier]; packed once per channel count."""
    shaders = ("depthwise_conv2d.comp",)
    drops_nan = True              # depthwise_conv2d.comp's linear clamp drops NaN

    def kernel_for(self, channels):
        cache = self.__dict__.setdefault("_kernels", {})
        if channels not in cache:
            cache[channels] = conv.pack_depthwise(self.kernel(channels), None, self.upload)
        return cache[channels]

    def nhwc_shape(self, shape):
        self.kernel_for(shape[3])       # uploaded at load, not at predict
        return shape[:3] + (shape[3] * self.multiplier,)

    def run_nhwc(self, x):
        kernel = self.kernel_for(x.shape[3])
        _, h, w, _ = x.shape
        _, top, bottom = conv.conv_padding(h, kernel.kh, 1, 1, "same")
        _, left, right = conv.conv_padding(w, kernel.kw, 1, 1, "same")
        return conv.depthwise_conv2d(x, kernel, padding=((top, bottom), (left, right)))


def _gaussian_1d(size: int, sigma: float) -> np.ndarray:
    x = np.arange(size, dtype=np.float32) - np.float32((size - 1) / 2)
    k = np.exp(np.float32(-0.5) * (x / np.float32(sigma)) ** 2)
    return k / np.sum(k)


@register_op("GaussianBlur")
class GaussianBlurOp(_DepthwiseImageOp):
    """ops.image.gaussian_blur: Keras's kernel is outer(g(kernel_size[1], sigma[1]),
    g(kernel_size[0], sigma[0])), rows by columns."""
    multiplier = 1

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        size, sigma = self.options.get("kernel_size", (3, 3)), self.options.get("sigma", (1.0, 1.0))
        size = (size, size) if isinstance(size, int) else tuple(size)
        sigma = (sigma, sigma) if isinstance(sigma, (int, float)) else tuple(sigma)
        if len(size) != 2 or len(sigma) != 2 or min(size) < 1:
            raise self.unsupported(f"kernel_size={list(size)}, sigma={list(sigma)}")
        self.blur = np.outer(_gaussian_1d(int(size[1]), float(sigma[1])),
                             _gaussian_1d(int(size[0]), float(sigma[0]))).astype(np.float32)

    def kernel(self, channels):
        return np.repeat(self.blur[:, :, None, None], channels, axis=2)


_SOBEL_Y = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float32)


@register_op("SobelEdges")
class SobelEdgesOp(_DepthwiseImageOp):
    """ops.image.sobel_edges: [..., channels, 2] holding (dy, dx) per channel (channels_first:
    [batch, channels, height, width, 2]); Keras takes batches only."""
    multiplier = 2

    def kernel(self, channels):
        pair = np.stack([_SOBEL_Y, _SOBEL_Y.T], axis=-1)          # [3, 3, (dy, dx)]
        return np.repeat(pair[:, :, None, :], channels, axis=2)

    def nhwc_shape(self, shape):
        super().nhwc_shape(shape)
        return shape + (2,)

    def from_nhwc(self, shape, rank):
        if self.channels_first:
            return (shape[0], shape[3], shape[1], shape[2], 2)
        return tuple(shape)

    def run(self, bound):
        x = bound["images"]
        self._check(x.shape)

        def compute():
            x4 = layout.transpose(x, (0, 2, 3, 1)) if self.channels_first else x
            edges = self.run_nhwc(x4)
            edges = view(edges, tuple(x4.shape) + (2,))
            return layout.transpose(edges, (0, 3, 1, 2, 4)) if self.channels_first else edges
        return ownership.tidy.run(compute)


@register_op("ExtractPatches")
class ExtractPatchesOp(ImageOp):
    """ops.image.extract_patches (2D): Keras convolves with an identity kernel, so each output
    pixel holds its patch flattened (row, column, channel); strides default to the size."""
    shaders = ("conv2d.comp",)
    drops_nan = True              # conv2d.comp's linear clamp drops NaN (and 0 * inf is NaN)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        size = self.options.get("size")
        size = (size, size) if isinstance(size, int) else tuple(size)
        if len(size) != 2:
            raise self.unsupported(f"size={list(size)} (3D patches)")
        self.patch = tuple(int(s) for s in size)
        strides = self.options.get("strides") or self.patch
        self.strides = (strides,) * 2 if isinstance(strides, int) else tuple(map(int, strides))
        dilation = self.options.get("dilation_rate", 1)
        self.dilation = (dilation,) * 2 if isinstance(dilation, int) else tuple(map(int, dilation))
        self.padding = str(self.options.get("padding", "valid")).lower()
        if self.padding not in ("valid", "same"):
            raise self.unsupported(f"padding={self.padding!r}")

    def _kernel(self, channels):
        cache = self.__dict__.setdefault("_kernels", {})
        if channels not in cache:
            out = self.patch[0] * self.patch[1] * channels
            eye = np.eye(out, dtype=np.float32).reshape(self.patch + (channels, out))
            cache[channels] = conv.pack_conv(eye, None, 1, self.upload)
        return cache[channels]

    def _geometry(self, h, w):
        rows = conv.conv_padding(h, self.patch[0], self.strides[0], self.dilation[0], self.padding)
        cols = conv.conv_padding(w, self.patch[1], self.strides[1], self.dilation[1], self.padding)
        return rows, cols

    def nhwc_shape(self, shape):
        self._kernel(shape[3])
        rows, cols = self._geometry(shape[1], shape[2])
        if rows[0] <= 0 or cols[0] <= 0:
            raise self.shape_error(f"patches of {list(self.patch)} do not fit {list(shape)}.")
        return (shape[0], rows[0], cols[0], self.patch[0] * self.patch[1] * shape[3])

    def run_nhwc(self, x):
        rows, cols = self._geometry(x.shape[1], x.shape[2])
        return conv.conv2d(x, self._kernel(x.shape[3]), self.strides, self.dilation,
                           ((rows[1], rows[2]), (cols[1], cols[2])))


@register_op("SSIM")
class SSIMOp(_DepthwiseImageOp):
    """ops.image.ssim(image1, image2): per image, the mean over positions and channels of the
    SSIM map, from Gaussian-windowed (filter_size, filter_sigma; valid padding) means, variances
    and covariance, as Keras's _ssim computes them."""
    params = ("image1", "image2")
    shaders = ("depthwise_conv2d.comp", "binary.comp", "reduce.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        size, sigma = int(self.options.get("filter_size", 11)), float(
            self.options.get("filter_sigma", 1.5))
        if size < 1:
            raise self.unsupported(f"filter_size={size}")
        x = np.arange(size, dtype=np.float32) - np.float32((size - 1) / 2.0)
        g = np.exp(-(x ** 2) / np.float32(2.0 * sigma ** 2)).astype(np.float32)
        g = g / np.sum(g)
        self.window = np.outer(g, g).astype(np.float32)
        max_val = float(self.options.get("max_val", 1.0))
        self.c1 = (float(self.options.get("k1", 0.01)) * max_val) ** 2
        self.c2 = (float(self.options.get("k2", 0.03)) * max_val) ** 2

    def kernel(self, channels):
        return np.repeat(self.window[:, :, None, None], channels, axis=2)

    def output_shape(self, bound):
        a, b = _shape(bound["image1"]), _shape(bound["image2"])
        for shape in (a, b):
            self._check(shape)
        if len(a) != len(b) or any(x is not None and y is not None and x != y
                                   for x, y in zip(a, b)):
            raise self.shape_error(f"image shapes {list(a)} and {list(b)} differ.")
        nhwc = self.to_nhwc(a)
        self.kernel_for(nhwc[3])
        size = self.window.shape[0]
        if any(d is not None and d < size for d in nhwc[1:3]):
            raise self.shape_error(f"images of {list(nhwc[1:3])} are smaller than the "
                                   f"{size}x{size} filter.")
        return (a[0],)

    def run(self, bound):
        x1, x2 = bound["image1"], bound["image2"]
        kernel = self.kernel_for(self.to_nhwc(x1.shape)[3])
        mul, sub, add, div = elementwise.mul, elementwise.sub, elementwise.add, elementwise.div

        def compute():
            a, b = ((layout.transpose(x, (0, 2, 3, 1)) if self.channels_first else x)
                    for x in (x1, x2))

            def window(x):
                return conv.depthwise_conv2d(x, kernel)
            mu1, mu2 = window(a), window(b)
            mu1_sq, mu2_sq, mu1_mu2 = mul(mu1, mu1), mul(mu2, mu2), mul(mu1, mu2)
            s1 = sub(window(mul(a, a)), mu1_sq)
            s2 = sub(window(mul(b, b)), mu2_sq)
            s12 = sub(window(mul(a, b)), mu1_mu2)
            numerator = mul(add(mul(mu1_mu2, 2.0), self.c1), add(mul(s12, 2.0), self.c2))
            denominator = mul(add(add(mu1_sq, mu2_sq), self.c1), add(add(s1, s2), self.c2))
            per_channel = reduce.reduce("mean", div(numerator, denominator), (1, 2), False)
            return reduce.reduce("mean", per_channel, -1, False)
        return ownership.tidy.run(compute)
