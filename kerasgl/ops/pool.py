"""Pooling, channels-last: max / average over windows (1D runs as 2D over one row) and global
max / average over every spatial position."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, view
from .channels_last import check_input, run_per_cell
from .storage_ops import any_storage


def pool_padding(size: int, pool: int, stride: int, padding: str) -> tuple[int, int]:
    """(output size, pad before) of one axis, Keras's rule for pooling."""
    if padding == "valid":
        return ((size - pool) // stride + 1 if size >= pool else 0), 0
    if padding == "same":
        out = -(-size // stride)
        return out, max((out - 1) * stride + pool - size, 0) // 2
    raise ValueError(f"Unknown padding {padding!r}; expected 'valid' or 'same'.")


def check_mode(mode: str, what: str) -> None:
    if mode not in ("max", "avg"):
        raise ValueError(f"{what} mode must be 'max' or 'avg', not {mode!r}.")


# pool2d.comp, global_pool.comp and pad_crop2d.comp read x where it is stored, a texture included,
# and write a texture for one (per_cell_input.glsl): no copies.
@any_storage(in_place=("x",))
def pool2d(x: Tensor, mode: str, pool_size, strides, padding: str = "valid",
           zero_padding=((0, 0), (0, 0))) -> Tensor:
    """Max ('max') or average ('avg') pooling of x [batch, height, width, channels].
    zero_padding ((top, bottom), (left, right)): pool x as if a ZeroPadding2D had padded it first
    (its zeros take part in the windows; padding must then be 'valid'): a ZeroPadding fused into
    the pooling at load (kerasgl/compiler/fusion.py), without the padded tensor."""
    check_mode(mode, "pool2d")
    check_input(x, 4, "pool2d")
    b, h, w, c = x.shape
    (top_zeros, bottom_zeros), (left_zeros, right_zeros) = zero_padding
    zero_pad = any(zero_padding[0]) or any(zero_padding[1])
    if zero_pad and padding != "valid":
        raise ValueError("pool2d: zero_padding needs padding='valid'.")
    oh, top = pool_padding(h + top_zeros + bottom_zeros, pool_size[0], strides[0], padding)
    ow, left = pool_padding(w + left_zeros + right_zeros, pool_size[1], strides[1], padding)
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"pool2d: a {pool_size[0]}x{pool_size[1]} window does not fit input shape "
                         f"{list(x.shape)} with padding '{padding}'"
                         f"{f' and zero padding {zero_padding}' if zero_pad else ''}.")
    if zero_pad:
        top, left = top_zeros, left_zeros
    return run_per_cell("pool2d.comp", x, (b, oh, ow, c),
                        defines={"IS_MAX": mode == "max", "ZERO_PAD": zero_pad},
                        uniforms={"in_h": h, "in_w": w, "out_h": oh, "out_w": ow,
                                  "pool_h": pool_size[0], "pool_w": pool_size[1],
                                  "stride_h": strides[0], "stride_w": strides[1],
                                  "pad_top": top, "pad_left": left}, per_cell_input=True,
                        ops_per_output=pool_size[0] * pool_size[1])


@any_storage(in_place=("x",))
def global_pool(x: Tensor, mode: str, keepdims: bool = False) -> Tensor:
    """Max or mean over every axis between batch and channels of x [batch, ..., channels]."""
    check_mode(mode, "global_pool")
    x._check_alive()
    if x.ndim < 3:
        raise ShapeError(f"global_pool expects an input [batch, ..., channels] of rank 3 or more. "
                         f"Received shape {list(x.shape)}.")
    b, c = x.shape[0], x.shape[-1]
    positions = math.prod(x.shape[1:-1])
    if positions == 0:
        raise ShapeError(f"global_pool: no spatial positions in input shape {list(x.shape)}.")

    def pooled():
        return run_per_cell("global_pool.comp", x, (b, c), defines={"IS_MAX": mode == "max"},
                            uniforms={"positions": positions}, per_cell_input=True,
                            ops_per_output=positions)
    if not keepdims:
        return pooled()
    # The view keeps the pooled storage; the tensor it views is freed.
    return ownership.tidy.run(lambda: view(pooled(), (b,) + (1,) * (x.ndim - 2) + (c,)))
