"""What the channels-last window ops (pooling, padding / cropping, upsampling, in 2D and 3D)
share: the input check, and one dispatch with an invocation per output cell, or per 4 channels of
it when the channels divide by 4 (vec4 loads and stores are much faster on llvmpipe)."""
from __future__ import annotations

from ..runtime import buffer_views, tuning
from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch, storage_ops, work

_LAYOUTS = {4: "[batch, height, width, channels]", 5: "[batch, depth, height, width, channels]"}


def check_input(x: Tensor, rank: int, what: str) -> None:
    """x is alive and of rank 4 (rank=4) or 5 (rank=5), channels last."""
    x._check_alive()
    if x.ndim != rank:
        raise ShapeError(f"{what} expects a {rank}D input {_LAYOUTS[rank]}. "
                         f"Received shape {list(x.shape)}.")


def run_per_cell(shader: str, x: Tensor, out_shape, defines: dict, uniforms: dict,
                 per_cell_input: bool = False, ops_per_output: int | None = None) -> Tensor:
    """A new tensor of out_shape (same channels as x, last) filled by `shader` from x. The shader
    gets the define VEC (4 or 1) and the uniforms `channels` (in VEC units) and `n` (invocations)
    besides the given ones. per_cell_input: the shader includes per_cell_input.glsl, which reads
    x where it is stored (a texture in place; a buffer through an image view where the device's
    tuning prefers it) and writes the result as a texture when x is one (as any_storage returns
    it, without a copy after). ops_per_output: the operations each output value costs (a pooling
    window's size), declared as the dispatch's work with the input and output bytes
    (ops/work.py); None declares none."""
    out = empty(out_shape, storage=storage_ops.result_storage(x) if per_cell_input else "buffer")
    if out.size:
        channels = x.shape[-1]
        vec = 4 if channels % 4 == 0 else 1
        n = out.size // vec
        x_view = (per_cell_input and vec == 4 and x.storage == "buffer"
                  and tuning.current().window_views and buffer_views.fits(x.nbytes))
        # Only per_cell_input.glsl's kernels take textures; another gets x's buffer (its op's
        # any_storage copied a texture x), and dispatch.run refuses a texture there.
        textures = {"reads": {0: "X"}, "writes": {1: "Y"}} if per_cell_input else {"reads": {}}
        storage_ops.run_in_place(
            shader, **textures, defines={"VEC": vec, "X_VIEW": x_view, **defines},
            buffers=[x, out], views=[(0, x)] if x_view else [],
            uniforms={**uniforms, "channels": channels // vec, "n": n},
            groups=dispatch.groups_for(n), work=None if ops_per_output is None else
            (ops_per_output * out.size, work.nbytes(x, out)))
    return out
