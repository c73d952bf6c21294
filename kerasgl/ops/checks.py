"""Argument checks the float ops share, with kerasgl's errors."""
from __future__ import annotations

from ..errors import ShapeError
from ..tensors.tensor import Tensor


def float32_tensor(x, what: str = "x") -> Tensor:
    """x, when it is a live float32 kerasgl Tensor; `what` names it in the error otherwise."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{what} must be a kerasgl Tensor, not {type(x).__name__}.")
    x._check_alive()
    if x.dtype != "float32":
        raise ShapeError(f"{what} must be float32. Received {x.dtype} of shape {list(x.shape)}.")
    return x
