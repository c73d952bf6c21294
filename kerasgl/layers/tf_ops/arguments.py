"""A recorded TensorFlow call's arguments, bound to the function's parameter names.

tf.keras saves a TFOpLambda call as its first argument, positionally (a tensor; a list with one
entry per tensor for concat / stack / add_n; or a constant, `2.0 - x` recording 2.0), and every
other argument by keyword, tensors among them as references (also inside lists and dicts: a
reshape's `[-1, n]`, getitem's slice bounds). TensorFlowOpLayer ops are turned into the same form
(node_def.py). So a call's leaves are tensors (a values.Sym at load, a Tensor when the model
runs), numbers, strings, None, and lists and dicts of them.

A number a function needs on the host (a reshape's shape, a resize's size, a slice bound) is
`static`: a constant of the call, or a tensor whose value load could compute (values.py); any
other is refused at load, naming the argument.
"""
from __future__ import annotations

import numpy as np

from ...saving.spec import TensorRef
from ...tensors.tensor import Tensor
from .values import Batch, Sym, is_number

MISSING = object()
# Keywords that change nothing a model computes.
IGNORED = ("name",)


def is_tensor(value) -> bool:
    return isinstance(value, (Sym, Tensor))


def tensors_in(value) -> list:
    """The tensor leaves of a nested argument, in order (references too, as recorded)."""
    if is_tensor(value) or isinstance(value, TensorRef):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors_in(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in tensors_in(item)]
    return []


def map_tensors(value, fn):
    """`value` with each tensor leaf t replaced by fn(t), in tensors_in's order."""
    if is_tensor(value):
        return fn(value)
    if isinstance(value, list):
        return [map_tensors(v, fn) for v in value]
    if isinstance(value, tuple):
        return tuple(map_tensors(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    return value


def has_refs(template) -> bool:
    """Whether a recorded argument holds a tensor reference anywhere."""
    return any(isinstance(t, TensorRef) for t in tensors_in(template))


def substitute(template, passed, make):
    """`template` (a call's structure, TensorRef leaves) with each reference replaced by
    make(p), p the matching entry of `passed` (the same structure holding what the graph handed
    over in the references' places: shapes at load)."""
    if isinstance(template, TensorRef):
        return make(passed)
    if isinstance(template, list):
        return [substitute(t, p, make) for t, p in zip(template, passed)]
    if isinstance(template, dict):
        return {k: substitute(v, passed[k], make) for k, v in template.items()}
    return template


class Args:
    """One call's arguments by parameter name; `loading`: the leaves are Syms (shape inference),
    else Tensors (predict)."""

    def __init__(self, function, values: dict, loading: bool):
        self.function, self.values, self.loading = function, values, loading

    @classmethod
    def bind(cls, function, first, kwargs: dict, loading: bool) -> "Args":
        """The call `function(first, **kwargs)` bound to function.params (compat.v1 spellings
        through function.aliases); a keyword the function does not take is refused."""
        values = {function.params[0]: first}
        for key, value in kwargs.items():
            if key in IGNORED:
                continue
            key = function.aliases.get(key, key)
            if key not in function.params:
                raise function.unsupported(f"the argument {key}={_shown(value)}")
            if value is None and key in values:
                continue           # a v1 spelling given besides the v2 one, left at None
            values[key] = value
        return cls(function, values, loading)

    # -- reading ---------------------------------------------------------------------------------
    def __contains__(self, name: str) -> bool:
        return self.values.get(name) is not None

    def get(self, name: str, default=None):
        """The argument as recorded (None, or not given: `default`)."""
        value = self.values.get(name)
        return default if value is None else value

    def tensor(self, name: str):
        value = self.values.get(name)
        if not is_tensor(value):
            raise self.function.unsupported(f"{name}={_shown(value)} (a tensor is expected)")
        return value

    def static(self, name: str, default=MISSING, batch: bool = False):
        """The argument's value on the host: constants as recorded, tensors by the value load
        computed for them (plain Python numbers and lists). Batch(k) entries are kept where
        `batch` allows them; any other unknown is refused."""
        value = self.values.get(name)
        if value is None:
            if default is MISSING:
                raise self.function.unsupported(f"no {name} argument")
            return default
        return self._host(name, value, batch)

    def _host(self, name, value, batch):
        if isinstance(value, Tensor):
            raise TypeError(f"tf.{self.function.name}: {name} is read at load, not at predict.")
        if isinstance(value, Sym):
            if value.value is None:
                raise self.function.unsupported(
                    f"{name} computed from tensor values (known only when the model runs)")
            entries = value.value.ravel().tolist()
            if any(e is None or (isinstance(e, Batch) and not batch) for e in entries):
                raise self.function.unsupported(
                    f"{name} = {value.value.tolist()!r} (sizes known only when the model runs)")
            return value.value.tolist()
        if isinstance(value, list):
            return [self._host(name, v, batch) for v in value]
        if isinstance(value, np.ndarray):
            return value.tolist()
        return value

    def dtype(self, name: str) -> str:
        """The argument's dtype at load: a tensor's, or a constant's as TensorFlow converts it."""
        return dtype_of_value(self.values.get(name))


def dtype_of_value(value) -> str:
    if is_tensor(value):
        return value.dtype
    array = np.asarray(value)
    if array.dtype.kind == "b":
        return "bool"
    if array.dtype.kind in "iu":
        return "int32"
    if array.dtype.kind == "f":
        return "float32"
    raise TypeError(f"no dtype for {value!r}")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["Args", "MISSING", "dtype_of_value", "has_refs", "is_number", "is_tensor",
           "map_tensors", "substitute", "tensors_in"]
