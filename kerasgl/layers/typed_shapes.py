"""Dtypes through shape inference, for op nodes: a shape is a tuple, and the shape of a tensor
that is not float32 is a TypedShape, the same tuple knowing its dtype ("int32": integer Inputs,
argmax's indices). Plain tuples are float32. The graph keeps whatever shapes the nodes return, so
an op node reads its arguments' dtypes at load and refuses one it cannot take there (never at
predict).

kerasgl tensors are float32, int32 or bool (0 / 1 words); Keras's other integer inputs arrive as
int32 and its other float inputs as float32 (layers/core/input_layer.py). promote() and binary_result()
give the dtypes Keras 3 (JAX) gives: checked against keras.backend.result_type and keras.ops on
symbolic tensors (tests/test_op_nodes_bool_int.py).
"""
from __future__ import annotations

from ..errors import ShapeError
from ..ops.typed import number_dtype
from ..tensors.tensor import Tensor

# Keras's promotion among kerasgl's dtypes: bool < int32 < float32. A Python number is weakly
# typed and acts as its kind (bool, int32, float32) does: int32 + 2 -> int32, int32 + 2.5 ->
# float32, bool + 2 -> int32.
ORDER = ("bool", "int32", "float32")


INT32_RANGE = (-2 ** 31, 2 ** 31 - 1)


# binary op -> what it is of two bools, where Keras gives a bool.
_BOOL_FORMS = {"add": "or", "maximum": "or", "mul": "and", "minimum": "and"}


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


def operand_dtype(value) -> str | None:
    """The dtype of an op node's argument: a tensor's, a Symbolic's (its TypedShape's), a Python
    number's (number_dtype); None for anything else."""
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (bool, int, float)):
        return number_dtype(value)
    if hasattr(value, "shape") and isinstance(value.shape, tuple):
        return dtype_of(value.shape)
    return None


def promote(*dtypes: str) -> str:
    return max(dtypes, key=ORDER.index)


def binary_result(op: str, a: str, b: str) -> tuple[str, str]:
    """(result dtype, how) of a binary op ("add", "floordiv", ... as keras_ops/node.py names them) on
    operands of dtypes a and b, as Keras types it; how is "float" (binary.comp, int and bool
    operands converted to float32) or a typed_binary.comp op. ValueError: a form kerasgl refuses,
    with the reason."""
    if op == "div":
        return "float32", "float"
    dtype = promote(a, b)
    if dtype == "float32":
        return "float32", "float"
    if op == "pow":
        raise ValueError(f"power of {a} and {b} operands (an integer power; only float32 runs)")
    if dtype == "bool":
        if op in _BOOL_FORMS:
            return "bool", _BOOL_FORMS[op]
        if op == "mod":
            return "int32", "mod"
        raise ValueError(f"{op} of two bools (Keras's graph says bool where jnp gives an int32 "
                         "or refuses)")
    return "int32", op


def broadcast_dims(a, b, where: str) -> tuple:
    """numpy broadcasting for shapes with None (unknown) dimensions."""
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x is None:
            out.append(y)
        elif y is None:
            out.append(x)
        else:
            raise ShapeError(f"{where}: shapes {list(a)} and {list(b)} cannot be broadcast together.")
    return tuple(out)
