"""The filter taps of TensorFlow's image resizers, one axis at a time, computed on the host in
float32 as TensorFlow's CPU kernels compute them (tensorflow/core/kernels/image/):

- scale_and_translate_op.cc (ComputeSpansCore) with the kernels of sampling_kernels.h: what
  tf.image.resize runs for lanczos3 / lanczos5 / gaussian / mitchellcubic, and for bilinear
  (triangle) and bicubic (keyscubic) with antialias=True;
- resize_bilinear_op.cc, resize_nearest_neighbor_op.cc, resize_bicubic_op.cc (its 1024-entry
  coefficient table, A = -0.75, or Keys' A = -0.5 with half_pixel_centers) and resize_area_op.cc:
  the legacy ops, with align_corners / half_pixel_centers.

Every one is separable: output position k of an axis is a weighted sum of input positions.
`Taps` holds, per output position, the first input position and the weights of the consecutive
run from there (positions a kernel clamps to the edge twice have their weights added), for
ops/resample_axis.py. A 2-D resize is one pass over rows, then one over columns, as
scale_and_translate gathers.
"""
from __future__ import annotations

import math

import numpy as np

F = np.float32
FLOAT_MIN = F(np.finfo(np.float32).tiny)
KERNEL_PI = F(3.14159265359)


class Taps:
    """starts (int32 [n_out]) and weights (float32 [n_out, span]) of one axis's resampling."""

    def __init__(self, taps: list):
        """taps: per output position, a list of (input position, float32 weight)."""
        self.n_out = len(taps)
        starts, runs = [], []
        for entries in taps:
            start = min((i for i, _ in entries), default=0)
            run = {}
            for i, w in entries:
                run[i - start] = F(run.get(i - start, F(0)) + w)
            starts.append(start)
            runs.append(run)
        self.span = max([max(run, default=0) + 1 for run in runs], default=1)
        self.starts = np.asarray(starts, dtype=np.int32)
        self.weights = np.zeros((self.n_out, self.span), dtype=np.float32)
        for k, run in enumerate(runs):
            for j, w in run.items():
                self.weights[k, j] = w


# -- sampling_kernels.h -----------------------------------------------------------------------
def _lanczos(radius: float):
    r = F(radius)

    def kernel(x):
        x = F(abs(x))
        if x > r:
            return F(0)
        if x <= F(1e-3):
            return F(1)
        px = KERNEL_PI * x
        return r * np.sin(px) * np.sin(px / r) / (KERNEL_PI * KERNEL_PI * x * x)
    return kernel, r


def _gaussian(x):
    radius, sigma = F(1.5), F(F(1.5) / F(3))
    x = F(abs(x))
    if x >= radius:
        return F(0)
    return F(math.exp(float(F(-x) * x) / (2.0 * float(sigma) * float(sigma))))


def _box(x):
    x = F(abs(x))
    return F(1) if x < F(0.5) else (F(0.5) if x == F(0.5) else F(0))


def _triangle(x):
    x = F(abs(x))
    return F(F(1) - x) if x < F(1) else F(0)


def _keys_cubic(x):
    x = F(abs(x))          # float32 throughout: numpy keeps float32 operands float32
    if x >= F(2):
        return F(0)
    if x >= F(1):
        return ((F(-0.5) * x + F(2.5)) * x - F(4)) * x + F(2)
    return ((F(1.5) * x - F(2.5)) * x) * x + F(1)


def _mitchell_cubic(x):
    x = F(abs(x))
    if x >= F(2):
        return F(0)
    if x >= F(1):
        return (((F(-7) / F(18)) * x + F(2)) * x - F(10) / F(3)) * x + F(16) / F(9)
    return (((F(7) / F(6)) * x - F(2)) * x) * x + F(8) / F(9)


KERNELS = {"lanczos3": _lanczos(3.0), "lanczos5": _lanczos(5.0), "gaussian": (_gaussian, F(1.5)),
           "box": (_box, F(1)), "triangle": (_triangle, F(1)),
           "keyscubic": (_keys_cubic, F(2)), "mitchellcubic": (_mitchell_cubic, F(2))}


def scale_and_translate(kernel_name: str, in_size: int, out_size: int, antialias: bool) -> Taps:
    """ComputeSpansCore for tf.image.resize: scale out / in (float32), no translation."""
    kernel, radius = KERNELS[kernel_name]
    scale = F(F(out_size) / F(in_size))
    inv_scale = F(1.0 / float(scale))
    inv_translate = F(-inv_scale * F(0))
    kernel_scale = max(inv_scale, F(1)) if antialias else F(1)
    reach = F(radius * kernel_scale)
    one_over_kernel_scale = F(F(1) / kernel_scale)
    taps = []
    for x in range(out_size):
        sample = F(F(F(F(x) + F(0.5)) * inv_scale) + inv_translate)
        if sample < 0 or sample > in_size:
            taps.append([])          # an empty span: the output is 0 there
            continue
        start = int(math.ceil(F(F(sample - reach) - F(0.5))))
        end = int(math.floor(F(F(sample + reach) - F(0.5))))
        start = min(max(start, 0), in_size - 1)
        end = min(max(end, 0), in_size - 1) + 1
        weights = [kernel(F(F(F(F(s) + F(0.5)) - sample) * one_over_kernel_scale))
                   for s in range(start, end)]
        total = F(0)
        for w in weights:
            total = F(total + w)
        if abs(total) >= F(F(1000) * FLOAT_MIN):
            factor = F(F(1) / total)
            taps.append([(s, F(w * factor)) for s, w in zip(range(start, end), weights)])
        else:
            taps.append([(start, F(0))])
    return Taps(taps)


# -- the legacy resize ops --------------------------------------------------------------------
def resize_scale(in_size: int, out_size: int, align_corners: bool):
    """CalculateResizeScale (image_resizer_state.h)."""
    if align_corners and out_size > 1:
        return F(F(in_size - 1) / F(out_size - 1))
    return F(F(in_size) / F(out_size))


def bilinear(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> Taps:
    scale, taps = resize_scale(in_size, out_size, align_corners), []
    for x in range(out_size):
        where = F(F(F(F(x) + F(0.5)) * scale) - F(0.5)) if half_pixel else F(F(x) * scale)
        low = F(math.floor(where))
        lerp = F(where - low)
        lower = max(int(low), 0)
        upper = min(int(math.ceil(where)), in_size - 1)
        taps.append([(lower, F(F(1) - lerp)), (upper, lerp)])
    return Taps(taps)


def nearest(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> Taps:
    scale, taps = resize_scale(in_size, out_size, align_corners), []
    for x in range(out_size):
        where = F(F(F(x) + F(0.5)) * scale) if half_pixel else F(F(x) * scale)
        # roundf (halves away from zero; `where` is never negative) or floorf
        index = math.floor(float(where) + 0.5) if align_corners else math.floor(where)
        index = min(index, in_size - 1)
        if half_pixel:
            index = max(0, index)
        taps.append([(index, F(1))])
    return Taps(taps)


_TABLE_SIZE = 1024


def _cubic_table(a: float) -> np.ndarray:
    """InitCoeffsTable: float32 [(1024 + 1) * 2], computed in double."""
    table = np.zeros((_TABLE_SIZE + 1) * 2, dtype=np.float32)
    for i in range(_TABLE_SIZE + 1):
        x = float(F(i * 1.0 / _TABLE_SIZE))
        table[i * 2] = F(((a + 2) * x - (a + 3)) * x * x + 1)
        x = float(F(x + 1.0))
        table[i * 2 + 1] = F(((a * x - 5 * a) * x + 8 * a) * x - 4 * a)
    return table


_TABLES = {}


def bicubic(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> Taps:
    """resize_bicubic: legacy (A = -0.75, edge positions repeated) or, with half_pixel_centers,
    Keys' cubic (A = -0.5, positions outside the image weigh 0 and the rest are renormalised)."""
    keys = half_pixel
    a = -0.5 if keys else -0.75
    table = _TABLES.get(a)
    if table is None:
        table = _TABLES[a] = _cubic_table(a)
    scale, taps = resize_scale(in_size, out_size, align_corners), []
    for x in range(out_size):
        where = F(F(F(F(x) + F(0.5)) * scale) - F(0.5)) if half_pixel else F(F(x) * scale)
        base = int(math.floor(where))
        delta = F(where - F(base))
        offset = int(np.rint(F(delta * F(_TABLE_SIZE))))       # lrintf: halves to even
        weights = [table[offset * 2 + 1], table[offset * 2],
                   table[(_TABLE_SIZE - offset) * 2], table[(_TABLE_SIZE - offset) * 2 + 1]]
        positions = [base - 1, base, base + 1, base + 2]
        bounded = [min(in_size - 1, max(0, p)) for p in positions]
        if keys:
            weights = [w if b == p else F(0) for w, b, p in zip(weights, bounded, positions)]
            total = F(F(F(weights[0] + weights[1]) + weights[2]) + weights[3])
            if abs(total) >= F(F(1000) * FLOAT_MIN):
                factor = F(F(1) / total)
                weights = [F(w * factor) for w in weights]
        taps.append(list(zip(bounded, weights)))
    return Taps(taps)


def area(in_size: int, out_size: int, align_corners: bool, factor) -> Taps:
    """resize_area: each output the input cells its footprint covers, by the part covered,
    times `factor` (TensorFlow's 1 / (height_scale * width_scale), given to one axis)."""
    scale, taps = resize_scale(in_size, out_size, align_corners), []
    for x in range(out_size):
        lo, hi = F(F(x) * scale), F(F(x + 1) * scale)
        entries = []
        for i in range(int(math.floor(lo)), int(math.ceil(hi))):
            if i < lo:
                part = scale if F(i + 1) > hi else F(F(i + 1) - lo)
            else:
                part = F(hi - F(i)) if F(i + 1) > hi else F(1)
            entries.append((min(in_size - 1, max(0, i)), F(part * factor)))
        taps.append(entries)
    return Taps(taps)
