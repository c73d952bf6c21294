"""3D spatial reshaping, channels-last: zero padding and cropping (one shift-with-zero-fill
kernel) and nearest upsampling by integer factors, over volumes [batch, d, h, w, channels]."""
from __future__ import annotations

from ..errors import ShapeError
from ..tensors.tensor import Tensor
from .channels_last import check_input, run_per_cell
from .storage_ops import any_storage


@any_storage
def pad_crop3d(x: Tensor, planes=(0, 0), rows=(0, 0), cols=(0, 0)) -> Tensor:
    """Add (positive) or remove (negative) (before, after) planes along depth, rows along height
    and columns along width; added cells are zeros."""
    check_input(x, 5, "pad_crop3d")
    b, d, h, w, c = x.shape
    od, oh, ow = d + sum(planes), h + sum(rows), w + sum(cols)
    if od <= 0 or oh <= 0 or ow <= 0:
        raise ShapeError(f"Padding (negative: cropping) {[tuple(planes), tuple(rows), tuple(cols)]} "
                         f"leaves nothing of input shape {list(x.shape)}.")
    return run_per_cell("pad_crop3d.comp", x, (b, od, oh, ow, c), defines={},
                        uniforms={"in_d": d, "in_h": h, "in_w": w, "out_d": od, "out_h": oh,
                                  "out_w": ow, "front": planes[0], "top": rows[0],
                                  "left": cols[0]})


@any_storage
def upsample3d(x: Tensor, factors=(2, 2, 2)) -> Tensor:
    """Repeat every voxel factors[0] x factors[1] x factors[2] times (nearest upsampling)."""
    check_input(x, 5, "upsample3d")
    fd, fh, fw = (int(f) for f in factors)
    if fd < 1 or fh < 1 or fw < 1:
        raise ShapeError(f"upsample3d factors must be positive integers. Received {list(factors)}.")
    b, d, h, w, c = x.shape
    return run_per_cell("upsample3d.comp", x, (b, d * fd, h * fh, w * fw, c), defines={},
                        uniforms={"in_d": d, "in_h": h, "in_w": w,
                                  "factor_d": fd, "factor_h": fh, "factor_w": fw})
