"""Tensors made on the GPU: constant fills (and random numbers, in random.py)."""
from __future__ import annotations

from ..tensors.tensor import Tensor, _check_storage, empty, normalize_dtype, normalize_shape
from . import dispatch
from .storage_ops import into_storage


def fill(shape, value, dtype="float32", storage: str = "buffer") -> Tensor:
    shape, dtype = normalize_shape(shape), normalize_dtype(dtype)
    _check_storage(storage)
    out = empty(shape, dtype, storage="buffer")
    if out.size:
        value = int(value) if dtype == "int32" else float(value)
        dispatch.run("fill.comp", defines={"IS_INT": dtype == "int32"}, buffers=[out],
                     uniforms={"n": out.size, "value": value}, groups=dispatch.groups_for(out.size))
    return into_storage(out, storage)


def zeros(shape, dtype="float32", storage: str = "buffer") -> Tensor:
    return fill(shape, 0, dtype, storage)


def ones(shape, dtype="float32", storage: str = "buffer") -> Tensor:
    return fill(shape, 1, dtype, storage)
