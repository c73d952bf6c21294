"""Normalisation ops: per-channel scale and shift (inference batch norm), layer normalisation over
any axes, and PReLU's per-channel slope (a per-channel map with the same indexing)."""
from __future__ import annotations

import math

from ..runtime import buffer_views, tuning
from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch, storage_ops
from .axes import normalize_axes, reduced_axes, run_over_axes
from .checks import float32_tensor
from .storage_ops import any_storage


def _channel_map(x: Tensor, scale: Tensor, shift: Tensor | None, axis: int, mode: int,
                 span: int = 1) -> Tensor:
    # An int32 input is read as float (Rescaling / Normalization of uint8 images cast it first).
    if not (isinstance(x, Tensor) and x.dtype == "int32"):
        x = float32_tensor(x)
    x._check_alive()
    scale = float32_tensor(scale, "scale")
    if x.ndim == 0:
        raise ShapeError("A per-channel op needs a tensor of rank >= 1. Received a scalar.")
    (axis,) = normalize_axes(axis, x.ndim)
    if not 1 <= span <= x.ndim - axis:
        raise ShapeError(f"A per-channel span of {span} axes from axis {axis} does not fit input "
                         f"shape {list(x.shape)}.")
    channels = math.prod(x.shape[axis:axis + span])
    if scale.size != channels or (shift is not None and float32_tensor(shift, "shift").size != channels):
        raise ShapeError(
            f"Per-channel parameters must have {channels} values (axes {axis}..{axis + span - 1} of input shape "
            f"{list(x.shape)}). Received {scale.size}"
            f"{'' if shift is None else f' and {shift.size}'}.")
    out = empty(x.shape, storage=storage_ops.result_storage(x, scale, shift))
    if out.size:
        inner = math.prod(x.shape[axis + span:])
        shift_or_scale = shift if shift is not None else scale   # bound even when unread
        vec4 = x.dtype != "int32" and out.size % 4 == 0
        # Operands in textures are read in place (channel_affine.comp's X_TEXTURE...); VIEWS
        # reads the others through views where every one that is a buffer fits in one.
        operands = ((0, x, "rgba32f"), (1, scale, "r32f"), (2, shift_or_scale, "r32f"))
        in_buffers = [v for v in operands if v[1].storage == "buffer"]
        views = vec4 and bool(in_buffers) and tuning.current().elementwise_views \
            and all(buffer_views.fits(t.nbytes, fmt) for _, t, fmt in in_buffers)
        storage_ops.run_in_place(
            "channel_affine.comp", reads={0: "X", 1: "SCALE", 2: "SHIFT"}, writes={3: "Y"},
            defines={"MODE": mode, "HAS_SHIFT": shift is not None and mode == 0,
                     "X_INT": x.dtype == "int32", "VEC4": vec4, "VIEWS": views},
            buffers=[x, scale, shift_or_scale, out], views=in_buffers if views else [],
            uniforms={"n": out.size, "inner": inner, "channels": channels},
            groups=dispatch.groups_for(out.size // 4 if vec4 else out.size))
    return out


# Per-channel ops: the channel c of an element is its flat index over the `span` axes starting at
# `axis` (span > 1 for parameters that vary over several adjacent axes; the caller broadcasts
# parameters over any axis of that span they do not vary along).
# x and the parameters are read where they are stored, textures included, and the result written
# as a texture when they all are (channel_affine.comp reads and writes images: no copies).
@any_storage(in_place=("x", "scale", "shift"))
def scale_shift(x: Tensor, scale: Tensor, shift: Tensor | None = None, axis: int = -1,
                span: int = 1) -> Tensor:
    """y = x * scale[c] + shift[c] (BatchNormalization at inference, with scale = gamma /
    sqrt(var + eps) and shift = beta - mean * scale folded at load; Rescaling)."""
    return _channel_map(x, scale, shift, axis, 0, span)


@any_storage(in_place=("x", "alpha"))
def prelu(x: Tensor, alpha: Tensor, axis: int = -1, span: int = 1) -> Tensor:
    """max(x, 0) - alpha[c] * max(-x, 0), as keras.layers.PReLU computes it."""
    return _channel_map(x, alpha, None, axis, 1, span)


@any_storage(in_place=("x", "mean", "std"))
def standardize(x: Tensor, mean: Tensor, std: Tensor, axis: int = -1, span: int = 1,
                invert: bool = False) -> Tensor:
    """(x - mean[c]) / std[c], or mean[c] + x * std[c] with invert (keras Normalization)."""
    return _channel_map(x, std, mean, axis, 3 if invert else 2, span)


@any_storage
def layer_norm(x: Tensor, gamma: Tensor | None = None, beta: Tensor | None = None, axis=-1,
               epsilon: float = 1e-3, rms_scaling: bool = False) -> Tensor:
    """Normalise over `axis` (int or sequence) as keras.ops.layer_normalization does.

    gamma / beta hold one value per element of the normalised axes, in C order of those axes
    (sorted), i.e. Keras's weights flattened."""
    x = float32_tensor(x)
    axes = reduced_axes(x, axis, "layer_norm")
    red_len = math.prod(x.shape[a] for a in axes)
    for name, param in (("gamma", gamma), ("beta", beta)):
        if param is not None and float32_tensor(param, name).size != red_len:
            raise ShapeError(f"layer_norm: {name} must have {red_len} values (the normalised axes "
                             f"{list(axes)} of input shape {list(x.shape)}). Received {param.size}.")
    return run_over_axes(
        "layer_norm.comp", x, axes,
        defines={"HAS_GAMMA": gamma is not None, "HAS_BETA": beta is not None and not rms_scaling,
                 "RMS_SCALING": bool(rms_scaling)},
        buffers=[x, gamma if gamma is not None else x, beta if beta is not None else x],
        uniforms={"epsilon": float(epsilon)})
