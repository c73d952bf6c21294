"""What the channels-last window ops (pooling, padding / cropping, upsampling, in 2D and 3D)
share: the input check, and one dispatch with an invocation per output cell, or per 4 channels of
it when the channels divide by 4 (vec4 loads and stores are much faster on llvmpipe)."""
from __future__ import annotations

from ..runtime import buffer_views, tuning
from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch, work

_LAYOUTS = {4: "[batch, height, width, channels]", 5: "[batch, depth, height, width, channels]"}


def check_input(x: Tensor, rank: int, what: str) -> None:
    """x is alive and of rank 4 (rank=4) or 5 (rank=5), channels last."""
    x._check_alive()
    if x.ndim != rank:
        raise ShapeError(f"{what} expects a {rank}D input {_LAYOUTS[rank]}. "
                         f"Received shape {list(x.shape)}.")


def run_per_cell(shader: str, x: Tensor, out_shape, defines: dict, uniforms: dict,
                 input_view: bool = False, ops_per_output: int | None = None) -> Tensor:
    """A new tensor of out_shape (same channels as x, last) filled by `shader` from x. The shader
    gets the define VEC (4 or 1) and the uniforms `channels` (in VEC units) and `n` (invocations)
    besides the given ones. input_view: the shader includes per_cell_input.glsl, which may then
    read x through an image view where the device's tuning prefers it. ops_per_output: the
    operations each output value costs (a pooling window's size), declared as the dispatch's
    work with the input and output bytes (ops/work.py); None declares none."""
    out = empty(out_shape)
    if out.size:
        channels = x.shape[-1]
        vec = 4 if channels % 4 == 0 else 1
        n = out.size // vec
        x_view = (input_view and vec == 4 and tuning.current().window_views
                  and buffer_views.fits(x.nbytes))
        dispatch.run(shader, defines={"VEC": vec, "X_VIEW": x_view, **defines}, buffers=[x, out],
                     views=[(0, x)] if x_view else [],
                     uniforms={**uniforms, "channels": channels // vec, "n": n},
                     groups=dispatch.groups_for(n),
                     work=None if ops_per_output is None else
                     (ops_per_output * out.size, work.nbytes(x, out)))
    return out
