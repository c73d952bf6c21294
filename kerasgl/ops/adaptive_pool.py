"""Adaptive pooling, channels-last: each output cell pools the input cells
[floor(o * L / O), ceil((o + 1) * L / O)) of every spatial axis (keras.ops.adaptive_max_pool /
adaptive_average_pool), in 1, 2 or 3 spatial dimensions."""
from __future__ import annotations

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, view
from .channels_last import run_per_cell
from .pool import check_mode
from .storage_ops import any_storage


@any_storage
def adaptive_pool(x: Tensor, mode: str, output_size) -> Tensor:
    """Max ('max') or average ('avg') adaptive pooling of x [batch, *spatial, channels] to
    [batch, *output_size, channels]; len(output_size) spatial axes, 1 to 3."""
    check_mode(mode, "adaptive_pool")
    x._check_alive()
    output_size = tuple(int(s) for s in output_size)
    spatial = len(output_size)
    if not 1 <= spatial <= 3 or x.ndim != spatial + 2:
        raise ShapeError(f"adaptive_pool to {output_size} expects an input of rank {spatial + 2} "
                         f"[batch, {spatial} spatial axes, channels]. Received {list(x.shape)}.")
    if any(s <= 0 for s in output_size) or any(d <= 0 for d in x.shape[1:-1]):
        raise ShapeError(f"adaptive_pool: cannot pool input shape {list(x.shape)} to "
                         f"{output_size}.")
    pad = (1,) * (3 - spatial)
    b, c = x.shape[0], x.shape[-1]
    d, h, w = pad + tuple(x.shape[1:-1])
    od, oh, ow = pad + output_size

    def compute():
        out = run_per_cell("adaptive_pool.comp", view(x, (b, d, h, w, c)), (b, od, oh, ow, c),
                           defines={"IS_MAX": mode == "max"},
                           uniforms={"in_d": d, "in_h": h, "in_w": w,
                                     "out_d": od, "out_h": oh, "out_w": ow})
        return view(out, (b,) + output_size + (c,))
    return ownership.tidy.run(compute)
