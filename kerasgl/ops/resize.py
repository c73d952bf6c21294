"""Image resizing, channels-last, as Keras 3's ops.image.resize computes it on JAX
(jax.image.resize): nearest, and bilinear with half-pixel centres (antialiased or not), of the
whole input or of a window: one inside it (crop_to_aspect_ratio; CenterCrop's smart_resize) or
one reaching beyond it, filled with a constant there (pad_to_aspect_ratio)."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..tensors.tensor import Tensor
from .channels_last import check_input, run_per_cell
from .storage_ops import any_storage

INTERPOLATIONS = ("nearest", "bilinear")


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


@any_storage
def resize(x: Tensor, size, interpolation: str = "bilinear", antialias: bool = False,
           window=None, fill: float = 0.0) -> Tensor:
    """x [batch, height, width, channels] resized to size = (out_height, out_width); window =
    (top, left, rows, cols) resizes that part of x only (None: all of it); its cells outside x
    hold `fill`."""
    check_input(x, 4, "resize")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"resize interpolation must be one of {INTERPOLATIONS}, "
                         f"not {interpolation!r}.")
    b, h, w, c = x.shape
    top, left, rows, cols = window if window is not None else (0, 0, h, w)
    out_h, out_w = int(size[0]), int(size[1])
    if out_h < 1 or out_w < 1:
        raise ShapeError(f"resize to {[out_h, out_w]}: the size must be positive.")
    if rows < 1 or cols < 1:
        raise ShapeError(f"resize of window (top, left, rows, cols) {[top, left, rows, cols]} of "
                         f"input shape {list(x.shape)}: the window is empty.")
    inv_h, kernel_h = _scales(rows, out_h, antialias)
    inv_w, kernel_w = _scales(cols, out_w, antialias)
    return run_per_cell("resize.comp", x, (b, out_h, out_w, c),
                        defines={"NEAREST": interpolation == "nearest"},
                        uniforms={"src_h": h, "src_w": w, "top": top, "left": left,
                                  "in_h": rows, "in_w": cols, "out_h": out_h, "out_w": out_w,
                                  "inv_scale_h": inv_h, "inv_scale_w": inv_w,
                                  "kernel_scale_h": kernel_h, "kernel_scale_w": kernel_w,
                                  "fill": float(fill)})
