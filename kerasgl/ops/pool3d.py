"""3D pooling, channels-last: max / average over windows of volumes [batch, d, h, w, channels].
Global 3D pooling needs nothing new: ops.pool.global_pool reduces over every spatial axis."""
from __future__ import annotations

from ..errors import ShapeError
from ..tensor import Tensor, empty
from . import dispatch
from .pool import pool_padding
from .storage_ops import any_storage


def _vec(channels: int) -> int:
    return 4 if channels % 4 == 0 else 1


@any_storage
def pool3d(x: Tensor, mode: str, pool_size, strides, padding: str = "valid") -> Tensor:
    """Max ('max') or average ('avg') pooling of x [batch, depth, height, width, channels];
    average pooling with padding="same" divides by the real (unpadded) cells, as Keras does."""
    x._check_alive()
    if mode not in ("max", "avg"):
        raise ValueError(f"pool3d mode must be 'max' or 'avg', not {mode!r}.")
    if x.ndim != 5:
        raise ShapeError(f"pool3d expects a 5D input [batch, depth, height, width, channels]. "
                         f"Received shape {list(x.shape)}.")
    b, d, h, w, c = x.shape
    axes = [pool_padding(size, p, s, padding) for size, p, s in zip((d, h, w), pool_size, strides)]
    (od, front), (oh, top), (ow, left) = axes
    if od <= 0 or oh <= 0 or ow <= 0:
        raise ShapeError(f"pool3d: a {'x'.join(map(str, pool_size))} window does not fit input "
                         f"shape {list(x.shape)} with padding '{padding}'.")
    out = empty((b, od, oh, ow, c))
    if out.size == 0:
        return out
    vec = _vec(c)
    n = out.size // vec
    dispatch.run("pool3d.comp", defines={"VEC": vec, "IS_MAX": mode == "max"}, buffers=[x, out],
                 uniforms={"in_d": d, "in_h": h, "in_w": w, "channels": c // vec,
                           "out_d": od, "out_h": oh, "out_w": ow,
                           "pool_d": pool_size[0], "pool_h": pool_size[1], "pool_w": pool_size[2],
                           "stride_d": strides[0], "stride_h": strides[1], "stride_w": strides[2],
                           "pad_front": front, "pad_top": top, "pad_left": left, "n": n},
                 groups=dispatch.groups_for(n))
    return out
