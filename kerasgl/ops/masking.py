"""Keras masks on the GPU: float32 tensors of 0.0 (masked) and 1.0 (kept), Keras's booleans.

The few ops masks need beyond the generic ones: comparison with a value (int token ids or
floats), any/all over the feature axis, and the masked mean over time of GlobalAveragePooling1D.
"""
from __future__ import annotations

from ..tensors import ownership
from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty, view
from . import dispatch, elementwise, reduce, softmax
from .storage_ops import any_storage


@any_storage
def not_equal(x: Tensor, value) -> Tensor:
    """1.0 where x != value, else 0.0 (x float32 or int32; the output is float32)."""
    x._check_alive()
    out = empty(x.shape)
    if out.size:
        integer = x.dtype == "int32"
        # A non-integer value never equals an int: the sentinel below is never a token id.
        dispatch.run("not_equal.comp", defines={"INT_INPUT": integer}, buffers=[x, out],
                     uniforms={"n": out.size, "value": float(value),
                               "ivalue": int(value) if float(value) == int(float(value)) else -2**31},
                     groups=dispatch.groups_for(out.size))
    return out


def any_last(x: Tensor, keepdims: bool = False) -> Tensor:
    """Logical any over the last axis of a 0/1 tensor."""
    return reduce.reduce("max", x, -1, keepdims)


def any_not_equal(x: Tensor, value, keepdims: bool = False) -> Tensor:
    """1.0 where any entry along the last axis of x differs from value, else 0.0 (the mask of
    keras.layers.Masking)."""
    return ownership.tidy.run(lambda: any_last(not_equal(x, value), keepdims))


def masked_mean_over_time(x: Tensor, mask: Tensor, keepdims: bool = False) -> Tensor:
    """Keras's GlobalAveragePooling1D with a mask: x (batch, time, features), mask (batch, time):
    sum over kept steps / number of kept steps (0/0 = nan, as Keras, for a fully masked row)."""
    if x.ndim != 3 or mask.shape != x.shape[:2]:
        raise ShapeError(f"A masked mean over time takes x (batch, time, features) and a mask "
                         f"(batch, time). Received {list(x.shape)} and {list(mask.shape)}.")

    def compute():
        m3 = view(mask, mask.shape + (1,))
        total = reduce.reduce("sum", elementwise.mul(x, m3), 1, keepdims)
        return elementwise.div(total, reduce.reduce("sum", m3, 1, keepdims))
    return ownership.tidy.run(compute)


def masked_softmax(x: Tensor, mask: Tensor, axis=-1) -> Tensor:
    """Keras 3's Softmax layer with a mask broadcast to x as numpy does: masked logits become
    -1e9, and masked outputs 0 (so a fully masked row is all zeros, not uniform)."""
    try:
        fits = mask.ndim <= x.ndim and elementwise.broadcast_shape(x.shape, mask.shape) == tuple(x.shape)
    except ShapeError:
        fits = False
    if not fits:
        raise ShapeError(f"A masked softmax needs a mask that broadcasts to the inputs. Received "
                         f"inputs of shape {list(x.shape)} and a mask of shape {list(mask.shape)}.")
    # x * m + (m - 1) * 1e9: exactly x where kept, exactly -1e9 where masked (Keras's where()).
    # The function form of tidy frees every temporary and hands the result to the caller's scope.
    def compute():
        filled = elementwise.mul(elementwise.binary("sub", mask, 1.0), 1e9)
        logits = elementwise.add(elementwise.mul(x, mask), filled)
        return elementwise.mul(softmax.softmax(logits, axis), mask)
    return ownership.tidy.run(compute)
