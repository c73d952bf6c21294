"""Tensor's operators and computing methods, attached from the ops side.

tensors/tensor.py sits below ops/ and imports none of it; this module, imported by
kerasgl/ops/__init__.py (so whenever any op is importable, and so whenever kerasgl is imported),
gives Tensor its arithmetic operators, element-wise methods, matmul, reshape / transpose, the
reductions and the storage conversions, each a thin call into the op that does the work (as
TensorFlow.js's chained ops add methods to its Tensor).
"""
from __future__ import annotations

import numpy as np

from ..tensors.tensor import Tensor
from . import elementwise, layout, matmul as matmul_ops, reduce as reduce_ops, storage_ops


def _binary(op: str, reverse: bool = False):
    if reverse:
        def method(self, other):
            return elementwise.binary(op, other, self)
    else:
        def method(self, other):
            return elementwise.binary(op, self, other)
    return method


def _unary(op: str):
    def method(self):
        return elementwise.unary(op, self)
    return method


def _reduction(op: str):
    def method(self, axis=None, keepdims=False):
        return reduce_ops.reduce(op, self, axis, keepdims)
    return method


def _matmul(self, other):
    return matmul_ops.matmul(self, other)


def _rmatmul(self, other):
    return matmul_ops.matmul(other, self)


def _reshape(self, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return layout.reshape(self, shape)


def _transpose(self, *axes):
    if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
        axes = axes[0]
    return layout.transpose(self, axes or None)


def _to_texture(self) -> Tensor:
    """A new tensor with the same data in a GL texture."""
    return storage_ops.to_texture(self)


def _to_buffer(self) -> Tensor:
    """A new tensor with the same data in a GL shader storage buffer."""
    return storage_ops.to_buffer(self)


METHODS = {
    "__add__": _binary("add"), "__radd__": _binary("add", reverse=True),
    "__sub__": _binary("sub"), "__rsub__": _binary("sub", reverse=True),
    "__mul__": _binary("mul"), "__rmul__": _binary("mul", reverse=True),
    "__truediv__": _binary("div"), "__rtruediv__": _binary("div", reverse=True),
    "__pow__": _binary("pow"),
    "__neg__": _unary("neg"),
    "__matmul__": _matmul, "__rmatmul__": _rmatmul, "matmul": _matmul,
    **{name: _unary(name) for name in ("exp", "log", "sqrt", "abs", "neg", "relu", "sigmoid",
                                       "tanh")},
    "maximum": _binary("maximum"), "minimum": _binary("minimum"),
    "reshape": _reshape, "transpose": _transpose, "T": property(lambda self: _transpose(self)),
    **{name: _reduction(name) for name in ("sum", "mean", "max", "min")},
    "to_texture": _to_texture, "to_buffer": _to_buffer,
}

for _name, _method in METHODS.items():
    if not isinstance(_method, property):
        _method.__name__, _method.__qualname__ = _name, f"Tensor.{_name}"
    setattr(Tensor, _name, _method)
