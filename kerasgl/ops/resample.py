"""Separable resampling by weight tables: the kernel methods of jax.image.resize (Keras 3's
ops.image.resize on JAX), "bicubic" (Keys' cubic, a = -0.5), "lanczos3" and "lanczos5", each
antialiased or not.

jax resizes one spatial axis at a time with a weight matrix [input, output]: the kernel at
|sample - input index| / kernel_scale, where sample = (o + 0.5) * inv_scale - 0.5 (float32) and
kernel_scale is max(inv_scale, 1) when antialiasing (a wider, low-pass kernel when downscaling),
else 1; each output's weights are divided by their sum (all zeroed where that sum is within 1000
float32 epsilons of 0), so the kernel's mass outside the image goes back onto the pixels inside
it (jax also zeroes samples that fall outside the image, which a resize never makes). An axis
whose size does not change is skipped: the kernels interpolate, so that is the identity.

Here the host makes, once per (input size, output size) at load, the same weights for the input
pixels each output reaches (a table [output, taps], zero-padded, and each output's first input
index), and ops/resample_axis.py applies it, one pass per axis. The sample positions are
computed in float32 exactly as jax's (a few thousand pixels in, their float32 rounding moves the
weights by more than the float32 tolerance), the kernel and the normalisation in float64; the
weights are then rounded to float32."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..tensors import ownership
from ..tensors.tensor import Tensor, view
from . import spatial
from .resample_axis import resample_axis
from .storage_ops import any_storage
from .tile_repeat_pad import pad_constant


def _keys_cubic(x):
    """Keys' cubic convolution kernel with a = -0.5 (jax's _fill_keys_cubic_kernel)."""
    near = ((1.5 * x - 2.5) * x) * x + 1.0
    far = ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0
    return np.where(x >= 2.0, 0.0, np.where(x >= 1.0, far, near))


def _lanczos(radius: float) -> Callable:
    """The Lanczos kernel sinc(x) sinc(x / radius) on |x| <= radius (jax's _fill_lanczos_kernel,
    1 where x <= 1e-3 as there)."""
    def kernel(x):
        y = radius * np.sin(np.pi * x) * np.sin(np.pi * x / radius)
        out = np.where(x > 1e-3, y / np.where(x != 0, np.pi ** 2 * x ** 2, 1.0), 1.0)
        return np.where(x > radius, 0.0, out)
    return kernel


# method -> (the kernel's radius, the kernel on |distance|)
KERNELS = {"bicubic": (2, _keys_cubic), "lanczos3": (3, _lanczos(3.0)),
           "lanczos5": (5, _lanczos(5.0))}
_NEGLIGIBLE_SUM = 1000.0 * float(np.finfo(np.float32).eps)


def resample_weights(in_size: int, out_size: int, method: str, antialias: bool):
    """(first [out] int32, weights [out, taps] float32): output o is the sum over k of
    weights[o, k] * input[first[o] + k], as jax.image.resize weighs it along one axis of
    in_size != out_size; every first[o] + k lies inside the input (outputs that reach fewer
    pixels have zero weights at the end)."""
    radius, kernel = KERNELS[method]
    # jax: scale = out / in, a Python float; inv_scale = 1 / scale, used in float32.
    inv_scale = np.float32(1.0 / (out_size / in_size))
    kernel_scale = max(inv_scale, np.float32(1.0)) if antialias else np.float32(1.0)
    sample = (np.arange(out_size, dtype=np.float32) + np.float32(0.5)) * inv_scale \
        - np.float32(0.5)
    reach = float(radius) * float(kernel_scale)
    low = np.clip(np.floor(sample - reach), 0, in_size - 1).astype(np.int64)
    high = np.clip(np.ceil(sample + reach), 0, in_size - 1).astype(np.int64)
    taps = int((high - low).max()) + 1
    first = np.minimum(low, in_size - taps)
    index = first[:, None] + np.arange(taps)
    distance = np.abs(sample[:, None] - index.astype(np.float32)) / kernel_scale   # float32
    weights = kernel(distance.astype(np.float64))
    total = weights.sum(axis=1, keepdims=True)
    weights = np.where(np.abs(total) > _NEGLIGIBLE_SUM,
                       weights / np.where(total != 0.0, total, 1.0), 0.0)
    return first.astype(np.int32), weights.astype(np.float32)


@dataclass(frozen=True)
class ResampleTable:
    """One axis's weights on the GPU (resample_weights' arrays), owned by whoever uploaded them."""
    first: Tensor
    weights: Tensor


def resample_table(in_size: int, out_size: int, method: str, antialias: bool,
                   upload: Callable) -> ResampleTable:
    """resample_weights uploaded with upload(array, dtype) (a layer's: the layer owns them)."""
    first, weights = resample_weights(in_size, out_size, method, antialias)
    return ResampleTable(upload(first, "int32"), upload(weights, "float32"))


def _window_of(x: Tensor, window, fill: float) -> Tensor:
    """x's window (top, left, rows, cols) as a tensor: padded with `fill` where it reaches beyond
    x (pad_to_aspect_ratio), cropped where it lies inside (crop_to_aspect_ratio); x itself when
    it is all of x."""
    top, left, rows, cols = window
    h, w = x.shape[1:3]
    pads = ((max(0, -top), max(0, top + rows - h)), (max(0, -left), max(0, left + cols - w)))
    crops = ((max(0, top), max(0, h - top - rows)), (max(0, left), max(0, w - left - cols)))

    def compute():
        framed = x
        if any(pads[0] + pads[1]):
            framed = pad_constant(x, ((0, 0),) + pads + ((0, 0),), fill)
        if any(crops[0] + crops[1]):
            framed = spatial.pad_crop2d(framed, tuple(-n for n in crops[0]),
                                        tuple(-n for n in crops[1]))
        return framed
    return ownership.tidy.run(compute)


@any_storage
def resample(x: Tensor, tables, window, fill: float = 0.0) -> Tensor:
    """x [batch, height, width, channels]: its window (top, left, rows, cols), whose cells outside
    x hold `fill`, resampled with tables = (rows' table, columns' table), None for an axis that
    keeps its size (jax skips it), by ops/resample_axis.py, one pass per axis."""
    def compute():
        result = _window_of(x, window, fill)
        passes = [(axis, table) for axis, table in ((1, tables[0]), (2, tables[1]))
                  if table is not None]
        if len(passes) == 2:
            # The order that reads fewer taps in all (jax's einsum picks its own; the sums agree
            # to float32 rounding).
            rows, cols = result.shape[1:3]
            (out_h, taps_h), (out_w, taps_w) = (t.weights.shape for _, t in passes)
            if rows * out_w * taps_w + out_h * out_w * taps_h < \
                    out_h * cols * taps_h + out_h * out_w * taps_w:
                passes.reverse()
        for axis, table in passes:
            result = resample_axis(result, axis, table.first, table.weights)
        return view(x, x.shape) if result is x else result
    return ownership.tidy.run(compute)
