"""Image resizing, channels-last, as Keras 3's ops.image.resize computes it on JAX
(jax.image.resize): nearest, bilinear with half-pixel centres (antialiased or not), and the
kernel methods of ops/resample.py (bicubic, lanczos3, lanczos5), of the whole input or of a
window: one inside it (crop_to_aspect_ratio; CenterCrop's smart_resize) or one reaching beyond
it, filled with a constant there (pad_to_aspect_ratio). `Resizer` is one configured resize (a
Resizing layer's, an ops.image.resize node's)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import ShapeError
from ..tensors.tensor import Tensor
from .channels_last import check_input, run_per_cell
from .resample import KERNELS, resample, resample_table
from .storage_ops import any_storage

# Keras-JAX's RESIZE_INTERPOLATIONS ("area", "gaussian", "mitchellcubic" are the TensorFlow
# backend's only: Keras on JAX refuses them when it runs).
INTERPOLATIONS = ("nearest", "bilinear") + tuple(KERNELS)


def aspect_window(height: int, width: int, target_height: int, target_width: int):
    """(top, left, rows, cols): the largest centred window of a height x width image with the
    target's aspect ratio, as Keras computes it (ops.image.resize's crop_to_aspect_ratio,
    image_utils.smart_resize)."""
    rows = max(min(height, int(float(width * target_height) / target_width)), 1)
    cols = max(min(width, int(float(height * target_width) / target_height)), 1)
    return int(float(height - rows) / 2), int(float(width - cols) / 2), rows, cols


def padded_window(height: int, width: int, target_height: int, target_width: int):
    """(top, left, rows, cols): the window, reaching beyond a height x width image, that Keras's
    pad_to_aspect_ratio resizes: padded evenly on both sides of the short axis, by
    int((padded size - size) / 2) each (one cell short of the ratio when the difference is odd)."""
    rows = max(height, int(float(width * target_height) / target_width))
    cols = max(width, int(float(height * target_width) / target_height))
    top, left = int(float(rows - height) / 2), int(float(cols - width) / 2)
    if top > 0:
        return -top, 0, height + 2 * top, width
    if left > 0:
        return 0, -left, height, width + 2 * left
    return 0, 0, height, width


def _scales(size_in: int, size_out: int, antialias: bool):
    # jax: scale = out / in (a Python float), inv_scale = 1 / scale, used in float32.
    inv_scale = float(np.float32(1.0 / (size_out / size_in)))
    return inv_scale, (max(inv_scale, 1.0) if antialias else 1.0)


def _checked(x: Tensor, size, window):
    """(top, left, rows, cols, out_height, out_width) of a resize of x, checked."""
    check_input(x, 4, "resize")
    top, left, rows, cols = window if window is not None else (0, 0) + tuple(x.shape[1:3])
    out_h, out_w = int(size[0]), int(size[1])
    if out_h < 1 or out_w < 1:
        raise ShapeError(f"resize to {[out_h, out_w]}: the size must be positive.")
    if rows < 1 or cols < 1:
        raise ShapeError(f"resize of window (top, left, rows, cols) {[top, left, rows, cols]} of "
                         f"input shape {list(x.shape)}: the window is empty.")
    return top, left, rows, cols, out_h, out_w


@any_storage
def resize(x: Tensor, size, interpolation: str = "bilinear", antialias: bool = False,
           window=None, fill: float = 0.0) -> Tensor:
    """x [batch, height, width, channels] resized to size = (out_height, out_width); window =
    (top, left, rows, cols) resizes that part of x only (None: all of it); its cells outside x
    hold `fill`."""
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"resize interpolation must be 'nearest' or 'bilinear' (the others "
                         f"take weight tables: Resizer), not {interpolation!r}.")
    top, left, rows, cols, out_h, out_w = _checked(x, size, window)
    b, h, w, c = x.shape
    inv_h, kernel_h = _scales(rows, out_h, antialias)
    inv_w, kernel_w = _scales(cols, out_w, antialias)
    return run_per_cell("resize.comp", x, (b, out_h, out_w, c),
                        defines={"NEAREST": interpolation == "nearest"},
                        uniforms={"src_h": h, "src_w": w, "top": top, "left": left,
                                  "in_h": rows, "in_w": cols, "out_h": out_h, "out_w": out_w,
                                  "inv_scale_h": inv_h, "inv_scale_w": inv_w,
                                  "kernel_scale_h": kernel_h, "kernel_scale_w": kernel_w,
                                  "fill": float(fill)})


class Resizer:
    """A resize to size = (height, width) as ops.image.resize configures it: interpolation (one
    of INTERPOLATIONS), antialias, crop_to_aspect_ratio or pad_to_aspect_ratio (filled with
    `fill`). The kernel methods' weight tables depend on the input's size: `prepare(h, w)` makes
    and uploads them with upload(array, dtype) (a layer's, which then owns them) at load where
    shape inference knows the size, else the first call of that size does."""

    def __init__(self, size, interpolation: str, antialias: bool = False,
                 crop_to_aspect_ratio: bool = False, pad_to_aspect_ratio: bool = False,
                 fill: float = 0.0, upload: Callable | None = None):
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"resize interpolation must be one of {INTERPOLATIONS}, "
                             f"not {interpolation!r}.")
        self.size = (int(size[0]), int(size[1]))
        self.interpolation, self.antialias = interpolation, bool(antialias)
        self.crop, self.pad = bool(crop_to_aspect_ratio), bool(pad_to_aspect_ratio)
        self.fill, self.upload = float(fill), upload
        self._tables: dict = {}

    @classmethod
    def from_options(cls, size, option: Callable, upload: Callable,
                     refuse: Callable[[str], Exception]) -> "Resizer":
        """The Resizer of a Resizing layer's or an ops.image.resize node's options, read with
        option(name, default); raises refuse(what) for those Keras on JAX does not run either
        (its backend's resize raises for them)."""
        interpolation = str(option("interpolation", "bilinear")).lower()
        crop = bool(option("crop_to_aspect_ratio", False))
        pad = bool(option("pad_to_aspect_ratio", False))
        fill_mode = option("fill_mode", "constant")
        if interpolation not in INTERPOLATIONS:
            raise refuse(f"interpolation={interpolation!r} (Keras on JAX resizes with "
                         f"{', '.join(INTERPOLATIONS)})")
        if crop and pad:
            raise refuse("crop_to_aspect_ratio and pad_to_aspect_ratio both True")
        if fill_mode != "constant":
            raise refuse(f"fill_mode={fill_mode!r}")
        return cls(size, interpolation, bool(option("antialias", False)), crop, pad,
                   float(option("fill_value", 0.0)), upload)

    @property
    def drops_nan(self) -> bool:
        """jax multiplies every pixel by its weight, zeros included, so one NaN or infinity makes
        its whole channel NaN; these kernels read the pixels near each sample only (nearest picks
        pixels, as jax does)."""
        return self.interpolation != "nearest"

    def window(self, h: int, w: int):
        """(top, left, rows, cols) of the h x w input that is resized."""
        if self.crop:
            return aspect_window(h, w, *self.size)
        if self.pad:
            return padded_window(h, w, *self.size)
        return 0, 0, h, w

    def prepare(self, h, w) -> None:
        """Upload the weight tables for an h x w input now (nothing where a size is unknown, None,
        or the method needs none)."""
        if h is not None and w is not None and self.interpolation in KERNELS:
            self._tables_for(*self.window(h, w)[2:])

    def _table(self, in_size: int, out_size: int):
        key = (in_size, out_size)
        if key not in self._tables:
            self._tables[key] = resample_table(in_size, out_size, self.interpolation,
                                               self.antialias, self.upload)
        return self._tables[key]

    def _tables_for(self, rows: int, cols: int):
        """(rows' table, columns' table) for a rows x cols window, None for an axis that keeps
        its size (jax skips it: the kernels interpolate, so that is the identity)."""
        out_h, out_w = self.size
        return (None if rows == out_h else self._table(rows, out_h),
                None if cols == out_w else self._table(cols, out_w))

    def __call__(self, x: Tensor) -> Tensor:
        check_input(x, 4, "resize")
        window = self.window(*x.shape[1:3])
        if self.interpolation not in KERNELS:
            return resize(x, self.size, self.interpolation, self.antialias, window, self.fill)
        _checked(x, self.size, window)
        return resample(x, self._tables_for(*window[2:]), window, self.fill)
