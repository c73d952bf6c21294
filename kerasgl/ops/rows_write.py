"""Writing rows into an existing tensor, in place: dst[:, start:start + T, ...] = src.

The one op that changes a tensor after it was made. A key/value cache is allocated once and takes
the keys and values of each new token here, so a generation step neither allocates nor uploads
the cache. Execution plans never see it: its `start` changes with every call.
"""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor
from . import dispatch
from .storage_ops import to_buffer


def write_rows(dst: Tensor, src: Tensor, start: int) -> None:
    """dst[:, start:start + src.shape[1], ...] = src, in dst's own storage. Both have rank >= 2
    and the same dtype; they agree on axis 0 and on every axis after 1."""
    for what, t in (("dst", dst), ("src", src)):
        if not isinstance(t, Tensor):
            raise TypeError(f"write_rows: {what} must be a kerasgl Tensor, not {type(t).__name__}.")
        t._check_alive()
    if dst.storage != "buffer":
        raise ShapeError("write_rows: dst must be stored in a buffer (it is written in place).")
    # A texture source is read through a temporary buffer copy.
    start = int(start)
    if (src.ndim < 2 or src.ndim != dst.ndim or src.dtype != dst.dtype
            or src.shape[0] != dst.shape[0] or src.shape[2:] != dst.shape[2:]
            or not 0 <= start <= dst.shape[1] - src.shape[1]):
        raise ShapeError(f"write_rows: rows of shape {list(src.shape)} ({src.dtype}) do not fit "
                         f"at row {start} of a tensor of shape {list(dst.shape)} ({dst.dtype}).")
    width = math.prod(dst.shape[2:])
    n = src.size
    if n == 0:
        return

    def write():
        source = src if src.storage == "buffer" else to_buffer(src)
        dispatch.run("rows_write.comp", buffers=[source, dst],
                     uniforms={"n": n, "block": src.shape[1] * width,
                               "dst_block": dst.shape[1] * width, "offset": start * width},
                     groups=dispatch.groups_for(n), work=(0, 8 * n))     # a copy: n words read and written
    ownership.tidy.run(write)
