"""depth_to_space / space_to_depth (pixel shuffle and unshuffle) of 4-D images: a reshape, a
transpose and a reshape (views around one copy), channels_last or channels_first, as Keras's
jax backend and TensorFlow's kernels order the channels (block row, block column, channel).
Keras 3's DepthToSpace / SpaceToDepth nodes (keras_ops/nn/spatial.py) and tf.keras's
tf.nn.depth_to_space layers (layers/tf_ops/layout.py) both run through here; float32 and int32.
"""
from __future__ import annotations

from ..errors import ShapeError
from ..tensors.tensor import Tensor
from ..tensors import ownership
from . import layout

KINDS = ("depth_to_space", "space_to_depth")


def _mul(value, factor):
    return None if value is None else value * factor


def _div(value, factor):
    return None if value is None else value // factor


def plan(shape, kind: str, block: int, channels_first: bool = False):
    """(split shape, permutation, final shape) for an input of `shape` (None: unknown sizes)."""
    if kind not in KINDS:
        raise ValueError(f"depth_space: kind {kind!r} is not one of {KINDS}.")
    if len(shape) != 4:
        raise ShapeError(f"takes 4-D inputs, not {list(shape)}.")
    n, h, w, c = (shape[0], shape[2], shape[3], shape[1]) if channels_first else tuple(shape)
    b = block
    if kind == "depth_to_space":
        if c is not None and c % (b * b):
            raise ShapeError(f"{c} channels are not a multiple of {b * b}.")
        nc = _div(c, b * b)
        if channels_first:
            return (n, nc, b, b, h, w), (0, 1, 4, 2, 5, 3), (n, nc, _mul(h, b), _mul(w, b))
        return (n, h, w, b, b, nc), (0, 1, 3, 2, 4, 5), (n, _mul(h, b), _mul(w, b), nc)
    if (h is not None and h % b) or (w is not None and w % b):
        raise ShapeError(f"spatial size {h}x{w} is not a multiple of {b}.")
    if channels_first:
        return (n, c, _div(h, b), b, _div(w, b), b), (0, 1, 3, 5, 2, 4), \
            (n, _mul(c, b * b), _div(h, b), _div(w, b))
    return (n, _div(h, b), b, _div(w, b), b, c), (0, 1, 3, 2, 4, 5), \
        (n, _div(h, b), _div(w, b), _mul(c, b * b))


def output_shape(shape, kind: str, block: int, channels_first: bool = False) -> tuple:
    return plan(shape, kind, block, channels_first)[2]


def depth_space(x: Tensor, kind: str, block: int, channels_first: bool = False) -> Tensor:
    """x rearranged by `kind` with blocks of block x block pixels: a new tensor."""
    split, perm, final = plan(x.shape, kind, block, channels_first)
    return ownership.tidy.run(lambda: layout.reshape(
        layout.transpose(layout.reshape(x, split), perm), final))
