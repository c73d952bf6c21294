"""Dtypes through shape inference, for op nodes: a shape is a tuple, and the shape of a tensor
that is not float32 is a TypedShape, the same tuple knowing its dtype ("int32": integer Inputs,
argmax's indices). Plain tuples are float32. The graph keeps whatever shapes the nodes return, so
an op node reads its arguments' dtypes at load and refuses one it cannot take there (never at
predict).

kerasgl tensors are float32 or int32; Keras's bool and other integer inputs arrive as int32
(layers/input_layer.py).
"""
from __future__ import annotations


class TypedShape(tuple):
    """A shape (tuple of ints / None) of a tensor of `dtype`."""
    dtype: str = "float32"

    def __new__(cls, dims, dtype: str = "float32"):
        shape = super().__new__(cls, dims)
        shape.dtype = dtype
        return shape

    def __reduce__(self):
        return TypedShape, (tuple(self), self.dtype)

    def __repr__(self) -> str:
        return f"{tuple(self)!r}:{self.dtype}"


def dtype_of(shape) -> str:
    return getattr(shape, "dtype", "float32")


def typed(shape, dtype: str):
    """`shape` carrying `dtype` (a plain tuple for float32)."""
    if shape is None:
        return None
    return tuple(shape) if dtype == "float32" else TypedShape(shape, dtype)
