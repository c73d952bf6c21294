"""3D spatial reshaping, channels-last: zero padding and cropping (one shift-with-zero-fill
kernel) and nearest upsampling by integer factors, over volumes [batch, d, h, w, channels]."""
from __future__ import annotations

from ..errors import ShapeError
from ..tensor import Tensor, empty
from . import dispatch
from .storage_ops import any_storage


def _vec(channels: int) -> int:
    return 4 if channels % 4 == 0 else 1


def _check_5d(x: Tensor, what: str) -> None:
    x._check_alive()
    if x.ndim != 5:
        raise ShapeError(f"{what} expects a 5D input [batch, depth, height, width, channels]. "
                         f"Received shape {list(x.shape)}.")


@any_storage
def pad_crop3d(x: Tensor, planes=(0, 0), rows=(0, 0), cols=(0, 0)) -> Tensor:
    """Add (positive) or remove (negative) (before, after) planes along depth, rows along height
    and columns along width; added cells are zeros."""
    _check_5d(x, "pad_crop3d")
    b, d, h, w, c = x.shape
    od, oh, ow = d + sum(planes), h + sum(rows), w + sum(cols)
    if od <= 0 or oh <= 0 or ow <= 0:
        raise ShapeError(f"Padding (negative: cropping) {[tuple(planes), tuple(rows), tuple(cols)]} "
                         f"leaves nothing of input shape {list(x.shape)}.")
    out = empty((b, od, oh, ow, c))
    if out.size:
        vec = _vec(c)
        n = out.size // vec
        dispatch.run("pad_crop3d.comp", defines={"VEC": vec}, buffers=[x, out],
                     uniforms={"in_d": d, "in_h": h, "in_w": w, "channels": c // vec,
                               "out_d": od, "out_h": oh, "out_w": ow,
                               "front": planes[0], "top": rows[0], "left": cols[0], "n": n},
                     groups=dispatch.groups_for(n))
    return out


@any_storage
def upsample3d(x: Tensor, factors=(2, 2, 2)) -> Tensor:
    """Repeat every voxel factors[0] x factors[1] x factors[2] times (nearest upsampling)."""
    _check_5d(x, "upsample3d")
    fd, fh, fw = (int(f) for f in factors)
    if fd < 1 or fh < 1 or fw < 1:
        raise ShapeError(f"upsample3d factors must be positive integers. Received {list(factors)}.")
    b, d, h, w, c = x.shape
    out = empty((b, d * fd, h * fh, w * fw, c))
    if out.size:
        vec = _vec(c)
        n = out.size // vec
        dispatch.run("upsample3d.comp", defines={"VEC": vec}, buffers=[x, out],
                     uniforms={"in_d": d, "in_h": h, "in_w": w, "channels": c // vec,
                               "factor_d": fd, "factor_h": fh, "factor_w": fw, "n": n},
                     groups=dispatch.groups_for(n))
    return out
