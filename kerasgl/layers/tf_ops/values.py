"""Tensors as a model's load sees them, and the values it can know there.

TensorFlow code computes sizes from shapes: `tf.reshape(x, [-1, tf.shape(x)[1] * 6])`,
`tf.image.resize(x, tf.shape(skip)[1:3])`, `tf.range(tf.shape(x)[1])`. tf.keras records each
step (shape, getitem, multiply...) as a layer of its own. Those small int tensors still run on
the GPU (a model may output them, or use them as data), but where one is a size, the layer that
reads it needs the number at load. So a shape here may carry the value of its tensor (a
KnownShape): entries are numbers, None (known only when the model runs) or Batch(k), k times
the batch size (tf.shape of an axis 0 that is unknown at load: the batch, by Keras's convention
for its layers' outputs). The graph hands shapes from layer to layer unchanged, so a later
tf.* layer reads the value where an earlier one computed it.
"""
from __future__ import annotations

import numpy as np

from ..typed_shapes import TypedShape, dtype_of, typed


class Batch:
    """k times the batch size: known once the model runs."""
    __slots__ = ("k",)

    def __init__(self, k: int = 1):
        self.k = k

    def __eq__(self, other):
        return isinstance(other, Batch) and other.k == self.k

    def __hash__(self):
        return hash(("batch", self.k))

    def __repr__(self) -> str:
        return "batch" if self.k == 1 else f"{self.k} * batch"


class KnownShape(TypedShape):
    """A shape of a tensor of `dtype` whose `value` (a numpy object array) is known at load."""
    value = None

    def __new__(cls, dims, dtype: str, value):
        shape = super().__new__(cls, dims, dtype)
        shape.value = value
        return shape

    def __reduce__(self):
        return KnownShape, (tuple(self), self.dtype, self.value)

    def __repr__(self) -> str:
        return f"{tuple(self)!r}:{self.dtype}={self.value.tolist()!r}"


def shaped(dims, dtype: str, value=None):
    """The shape the graph passes on: a KnownShape when the value is known, else typed."""
    dims = tuple(dims)
    if value is not None:
        return KnownShape(dims, dtype, np.asarray(value, dtype=object).reshape(dims))
    return typed(dims, dtype)


def is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _scalar_op(fn):
    """fn over two entries, None where either is unknown; Batch only survives a product with an
    integer (k * batch * n)."""
    def apply(a, b):
        if a is None or b is None:
            return None
        if isinstance(a, Batch) or isinstance(b, Batch):
            return fn(a, b) if fn is _multiply else None
        return fn(a, b)
    return apply


def _multiply(a, b):
    if isinstance(a, Batch) and isinstance(b, (int, np.integer)):
        return Batch(a.k * int(b))
    if isinstance(b, Batch) and isinstance(a, (int, np.integer)):
        return Batch(b.k * int(a))
    if isinstance(a, Batch) or isinstance(b, Batch):
        return None
    return a * b


def combine(fn, a, b):
    """fn(a, b) entry by entry over two known values (object arrays), numpy broadcasting; the
    product keeps Batch entries (see _scalar_op)."""
    fn = _multiply if fn == "multiply" else fn
    return np.frompyfunc(_scalar_op(fn), 2, 1)(np.asarray(a, dtype=object),
                                                np.asarray(b, dtype=object))


def convert(value, dtype: str):
    """A known value as another dtype (tf.cast): unknown entries stay unknown."""
    def one(v):
        if v is None or isinstance(v, Batch):
            return None
        if dtype == "float32":
            return float(np.float32(v))
        if dtype == "bool":
            return bool(v)
        return int(v)            # toward zero, as tf.cast of a float
    return np.frompyfunc(one, 1, 1)(np.asarray(value, dtype=object))


class Sym:
    """A tensor argument at load: its shape (None dims unknown), dtype and known value (or None)."""
    __slots__ = ("shape", "dtype", "value")

    def __init__(self, shape):
        self.dtype = dtype_of(shape)
        self.value = getattr(shape, "value", None)
        self.shape = tuple(shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Sym({self.shape}, {self.dtype})"
