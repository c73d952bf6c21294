"""softmax and log_softmax over any axis (or set of axes), numerically stable."""
from __future__ import annotations

from ..tensors.tensor import Tensor
from .axes import reduced_axes, run_over_axes
from .checks import float32_tensor
from .storage_ops import any_storage


def _run(x: Tensor, axis, log: bool) -> Tensor:
    x = float32_tensor(x, "softmax input")
    return run_over_axes("softmax.comp", x, reduced_axes(x, axis, "softmax"),
                         defines={"LOG": log}, buffers=[x], uniforms={})


@any_storage
def softmax(x: Tensor, axis=-1) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) over `axis` (an int or a sequence of ints)."""
    return _run(x, axis, log=False)


@any_storage
def log_softmax(x: Tensor, axis=-1) -> Tensor:
    """x - max - log(sum(exp(x - max))) over `axis` (an int or a sequence of ints)."""
    return _run(x, axis, log=True)
