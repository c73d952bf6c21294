"""Framing of signals along their last axis (keras.ops.extract_sequences, the frames of an STFT) and
numpy's "reflect" padding of that axis (the centring of keras.ops.stft). Copies of words through
shaders/strided_slice.comp: float32 and int32 alike, values unchanged."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty
from . import dispatch, merge
from .slicing import strided_slice
from .storage_ops import any_storage

MAX_RANK = 8


def frame_count(length: int, frame: int, stride: int) -> int:
    """Frames of `frame` samples, `stride` apart, that fit in `length` samples."""
    return 1 + (length - frame) // stride if length >= frame else 0


@any_storage
def frames(x: Tensor, frame: int, stride: int) -> Tensor:
    """y[..., f, k] = x[..., f * stride + k]: shape x.shape[:-1] + (frames, frame)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"frames() takes a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    if x.ndim < 1 or frame < 1 or stride < 1:
        raise ShapeError(f"frames: frames of {frame} samples {stride} apart over the last axis of "
                         f"shape {list(x.shape)}.")
    length = x.shape[-1]
    count = frame_count(length, frame, stride)
    out_shape = tuple(x.shape[:-1]) + (count, frame)
    out = empty(out_shape, x.dtype)
    if not out.size:
        return out
    lead = math.prod(x.shape[:-1])
    kept = [(lead, length), (count, stride), (frame, 1)]
    if lead == 1:
        kept = kept[1:]
    dispatch.run("strided_slice.comp", buffers=[x, out],
                 uniforms={"rank": len(kept), "n": out.size, "base": 0,
                           "out_shape": tuple(s for s, _ in kept) + (1,) * (MAX_RANK - len(kept)),
                           "in_strides": tuple(t for _, t in kept) + (0,) * (MAX_RANK - len(kept))},
                 groups=dispatch.groups_for(out.size))
    return out


@any_storage
def reflect_pad(x: Tensor, pad: int) -> Tensor:
    """numpy.pad(x, pad, mode="reflect") over the last axis only (the edge sample not repeated):
    needs pad < x.shape[-1]."""
    length = x.shape[-1]
    if pad < 0 or (pad and pad >= length):
        raise ShapeError(f"reflect_pad: {pad} samples reflected at each end of a signal of "
                         f"{length} (numpy's reflect padding needs fewer than the length).")
    whole = [(0, n, 1) for n in x.shape[:-1]]
    if pad == 0:
        return strided_slice(x, whole + [(0, length, 1)])
    return ownership.tidy.run(lambda: merge.concatenate(
        [strided_slice(x, whole + [(pad, pad, -1)]), x,
         strided_slice(x, whole + [(length - 2, pad, -1)])], axis=-1))
