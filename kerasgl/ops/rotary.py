"""Rotary position embedding (RoFormer's RoPE, as KerasHub applies it): each query or key vector
is rotated, pair by pair of its depth's halves, by angles that grow with its token's position.

The angles (cos and sin per token and depth) are the caller's: models differ in how they make
them (wavelength, scalings), not in how they are applied.
"""
from __future__ import annotations

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch, work
from .storage_ops import any_storage


@any_storage
def rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x (batch, tokens, heads, depth) float32, depth even; cos, sin (tokens, depth):
    x * cos + concat(-x[..., depth/2:], x[..., :depth/2]) * sin, a new tensor."""
    for what, t in (("x", x), ("cos", cos), ("sin", sin)):
        if not isinstance(t, Tensor):
            raise TypeError(f"rotary: {what} must be a kerasgl Tensor, not {type(t).__name__}.")
        t._check_alive()
    if x.ndim != 4 or x.dtype != "float32" or x.shape[3] % 2 \
            or cos.shape != (x.shape[1], x.shape[3]) or sin.shape != cos.shape:
        raise ShapeError(f"rotary: x of shape {list(x.shape)} ({x.dtype}) with angles of shapes "
                         f"{list(cos.shape)} and {list(sin.shape)} (expected x (batch, tokens, "
                         "heads, even depth) and angles (tokens, depth)).")
    out = empty(x.shape)
    if out.size:
        dispatch.run("rotary.comp", buffers=[x, cos, sin, out],
                     uniforms={"n": out.size, "tokens": x.shape[1], "heads": x.shape[2],
                               "depth": x.shape[3]},
                     groups=dispatch.groups_for(out.size),
                     # x * cos + rotated(x) * sin: three operations per output
                     work=(3 * out.size, work.nbytes(x, cos, sin, out)))
    return out
