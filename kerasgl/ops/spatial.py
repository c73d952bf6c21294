"""Spatial reshaping, channels-last: zero padding and cropping (one shift-with-zero-fill kernel),
and upsampling by integer factors (nearest or bilinear). 1D variants run as 2D over one row."""
from __future__ import annotations

from ..errors import ShapeError
from ..tensors.tensor import Tensor
from .channels_last import check_input, run_per_cell
from .storage_ops import any_storage


@any_storage(in_place=("x",))       # pad_crop2d.comp reads and writes textures in place
def pad_crop2d(x: Tensor, rows=(0, 0), cols=(0, 0)) -> Tensor:
    """Add (positive) or remove (negative) rows[0] rows on top, rows[1] at the bottom, cols[0]
    columns on the left and cols[1] on the right; added cells are zeros."""
    check_input(x, 4, "pad_crop2d")
    b, h, w, c = x.shape
    oh, ow = h + rows[0] + rows[1], w + cols[0] + cols[1]
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"Cropping rows {[-r for r in rows]} and columns {[-c for c in cols]} "
                         f"leaves nothing of input shape {list(x.shape)}.")
    return run_per_cell("pad_crop2d.comp", x, (b, oh, ow, c), defines={},
                        uniforms={"in_h": h, "in_w": w, "out_h": oh, "out_w": ow,
                                  "top": rows[0], "left": cols[0]}, per_cell_input=True)


INTERPOLATIONS = ("nearest", "bilinear")


@any_storage
def upsample2d(x: Tensor, factors=(2, 2), interpolation: str = "nearest") -> Tensor:
    """Upsample height and width by integer factors."""
    check_input(x, 4, "upsample2d")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"upsample2d interpolation must be one of {INTERPOLATIONS}, not {interpolation!r}.")
    fh, fw = int(factors[0]), int(factors[1])
    if fh < 1 or fw < 1:
        raise ShapeError(f"upsample2d factors must be positive integers. Received {list(factors)}.")
    b, h, w, c = x.shape
    return run_per_cell("upsample2d.comp", x, (b, h * fh, w * fw, c),
                        defines={"NEAREST": interpolation == "nearest"},
                        uniforms={"in_h": h, "in_w": w, "factor_h": fh, "factor_w": fw})
