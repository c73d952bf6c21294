"""Separable linear resampling along one axis: each output position a weighted sum of a run of
consecutive input positions (shaders/resample_axis.comp). Weights and run starts are computed
on the host once (an image resize's filter taps, per output row or column) and uploaded; a 2-D
resize is one pass along each axis. float32.
"""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch, work
from .checks import float32_tensor
from .storage_ops import any_storage


@any_storage
def resample_axis(x: Tensor, axis: int, starts: Tensor, weights: Tensor) -> Tensor:
    """out with x's shape but starts.size positions along `axis`: out[..., k, ...] =
    sum_j weights[k, j] * x[..., starts[k] + j, ...] over the taps inside the axis. starts is an
    int32 tensor of n_out run starts in [0, n_in), weights a float32 [n_out, span] tensor."""
    x = float32_tensor(x, "resample_axis input")
    if not -x.ndim <= axis < x.ndim:
        raise ShapeError(f"resample_axis: axis {axis} of a tensor of shape {list(x.shape)}.")
    axis %= x.ndim
    n_out = starts.size
    if starts.dtype != "int32" or weights.dtype != "float32" or weights.ndim != 2 \
            or weights.shape[0] != n_out or weights.shape[1] < 1:
        raise ShapeError(f"resample_axis: {starts.dtype} starts of shape {list(starts.shape)} and "
                         f"{weights.dtype} weights of shape {list(weights.shape)} (int32 [n_out] "
                         "and float32 [n_out, span] expected).")
    if n_out and not x.shape[axis]:
        raise ShapeError(f"resample_axis: axis {axis} of shape {list(x.shape)} has nothing to "
                         "resample.")
    out = empty(x.shape[:axis] + (n_out,) + x.shape[axis + 1:])
    if out.size:
        dispatch.run("resample_axis.comp", buffers=[x, starts, weights, out],
                     uniforms={"n": out.size, "inner": math.prod(x.shape[axis + 1:]),
                               "n_out": n_out, "n_in": x.shape[axis],
                               "span": weights.shape[1]},
                     groups=dispatch.groups_for(out.size),
                     # a multiply-add per tap of each output; the taps read once per output row
                     work=(2 * out.size * weights.shape[1], work.nbytes(x, starts, weights, out)))
    return out
