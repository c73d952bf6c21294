"""3D pooling, channels-last: max / average over windows of volumes [batch, d, h, w, channels].
Global 3D pooling needs nothing new: ops.pool.global_pool reduces over every spatial axis."""
from __future__ import annotations

from ..errors import ShapeError
from ..tensors.tensor import Tensor
from .channels_last import check_input, run_per_cell
from .pool import check_mode, pool_padding
from .storage_ops import any_storage


@any_storage
def pool3d(x: Tensor, mode: str, pool_size, strides, padding: str = "valid") -> Tensor:
    """Max ('max') or average ('avg') pooling of x [batch, depth, height, width, channels];
    average pooling with padding="same" divides by the real (unpadded) cells, as Keras does."""
    check_mode(mode, "pool3d")
    check_input(x, 5, "pool3d")
    b, d, h, w, c = x.shape
    axes = [pool_padding(size, p, s, padding) for size, p, s in zip((d, h, w), pool_size, strides)]
    (od, front), (oh, top), (ow, left) = axes
    if od <= 0 or oh <= 0 or ow <= 0:
        raise ShapeError(f"pool3d: a {'x'.join(map(str, pool_size))} window does not fit input "
                         f"shape {list(x.shape)} with padding '{padding}'.")
    return run_per_cell("pool3d.comp", x, (b, od, oh, ow, c), defines={"IS_MAX": mode == "max"},
                        uniforms={"in_d": d, "in_h": h, "in_w": w, "out_d": od, "out_h": oh,
                                  "out_w": ow, "pool_d": pool_size[0], "pool_h": pool_size[1],
                                  "pool_w": pool_size[2], "stride_d": strides[0],
                                  "stride_h": strides[1], "stride_w": strides[2],
                                  "pad_front": front, "pad_top": top, "pad_left": left})
