"""A layer's config values, read and checked in one place per kind of value.

A model file's config is JSON anyone can write: `units` may be null, "abc", NaN, a list or a dict;
a key may be missing. Every layer reads its values through these functions, which refuse what
does not fit with a ModelFileError naming the layer, the key, the value and what was expected
(Model.from_spec adds the file):

    self.units = config_values.positive_int(self, "units")
    self.kernel_size = config_values.int_tuple(self, "kernel_size", 2)
    self.epsilon = config_values.number(self, "epsilon", 1e-3)

They refuse what Keras refuses (0 or negative sizes, a padding Keras does not know) and a little
more where Keras would take a value only to fail later (a float where an integer is meant, a
bool where a number is). What Keras accepts and computes with, NaN included (an epsilon of NaN
gives NaN outputs), they pass on.
"""
from __future__ import annotations

import math
import numbers

from ..errors import ModelFileError

REQUIRED = object()      # no default: the key must be in the config


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Values:
    """A config read outside a layer object (a recurrent layer's cell config): `where` opens its
    errors ("Layer 'lstm' (LSTM)"). The functions below take a layer or one of these."""
    __slots__ = ("where", "config", "class_name")

    def __init__(self, where: str, config: dict, class_name: str = ""):
        self.where, self.config, self.class_name = where, config, class_name


def _where(layer) -> str:
    return getattr(layer, "where", None) or f"Layer '{layer.name}' ({layer.class_name})"


def error(layer, key: str, value, expected: str) -> ModelFileError:
    """The error for config[key] = value where `expected` was wanted."""
    return ModelFileError(f"{_where(layer)}: config value {key!r} is {_shown(value)}; expected "
                          f"{expected}.")


def raw(layer, key: str, default=REQUIRED):
    """config[key], or `default` when the key is absent (ModelFileError when it is required)."""
    config = layer.config
    if not isinstance(config, dict):
        raise ModelFileError(f"{_where(layer)}: its config is {_shown(config)}, not a JSON object.")
    if key in config:
        return config[key]
    if default is REQUIRED:
        raise ModelFileError(f"{_where(layer)}: its config has no {key!r}, which a "
                             f"{layer.class_name or 'layer of this class'} needs.")
    return default


def is_int(value) -> bool:
    """An integer, not a bool (JSON true is no size) nor a float (4.0 is refused by Keras for
    units, and a float kernel size fails in Keras only later)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def integer(layer, key: str, default=REQUIRED, minimum: int | None = None,
            what: str = "an integer") -> int:
    value = raw(layer, key, default)
    if not is_int(value) or (minimum is not None and value < minimum):
        raise error(layer, key, value, what)
    return int(value)


def positive_int(layer, key: str, default=REQUIRED) -> int:
    return integer(layer, key, default, 1, "a positive integer")


def optional_positive_int(layer, key: str) -> int | None:
    """A positive integer, or None (null or absent) for "not given"."""
    if raw(layer, key, None) is None:
        return None
    return positive_int(layer, key)


def int_tuple(layer, key: str, n: int, default=REQUIRED, minimum: int = 1) -> tuple[int, ...]:
    """Keras's standardize_tuple: one integer (repeated n times) or a list of n integers, each
    >= minimum (1: Keras refuses 0 for kernel_size, pool_size, dilation_rate, a conv's strides;
    0 where Keras allows it)."""
    value = raw(layer, key, default)
    expected = (f"an integer >= {minimum} or a list of {n} such integers" if n > 1
                else f"an integer >= {minimum}")
    # Keras's standardize_tuple takes anything isinstance(v, int) accepts, bools too: a stride of
    # true is a stride of 1 there.
    if isinstance(value, numbers.Integral):
        values = (int(value),) * n
    elif isinstance(value, (list, tuple)) and len(value) == n \
            and all(isinstance(v, numbers.Integral) for v in value):
        values = tuple(int(v) for v in value)
    else:
        raise error(layer, key, value, expected)
    if any(v < minimum for v in values):
        raise error(layer, key, value, expected)
    return values


def number(layer, key: str, default=REQUIRED, finite: bool = False,
           minimum: float | None = None) -> float:
    """A real number. NaN and +-inf pass unless `finite`: Keras computes with them (a
    LayerNormalization epsilon of NaN gives NaN). A bool is read as 0 / 1, as Keras's arithmetic
    reads it (`variance + True`). With `minimum`, a value below it is refused (NaN is not below
    anything, as in Keras's `value < minimum` checks)."""
    value = raw(layer, key, default)
    if isinstance(value, bool):
        value = int(value)
    if not is_number(value) or (finite and not math.isfinite(value)) \
            or (minimum is not None and value < minimum):
        expected = "a finite number" if finite else "a number"
        raise error(layer, key, value, expected + ("" if minimum is None else f" >= {minimum}"))
    return float(value)


def optional_number(layer, key: str, minimum: float | None = None) -> float | None:
    if raw(layer, key, None) is None:
        return None
    return number(layer, key, minimum=minimum)


def flag(layer, key: str, default: bool, passed_to_backend: bool = False) -> bool:
    """A boolean option, read as Keras reads it: by Python truth (`if self.center:`), so null, 0,
    0.0, "" and [] are false and any other value (a list, a string, a dict) is true. An option
    Keras hands to its backend as it is (an RNN's go_backwards becomes jax.lax.scan's `reverse`,
    which takes a bool or 0 / 1 only) is refused unless it is one of those."""
    value = raw(layer, key, default)
    if passed_to_backend and not isinstance(value, (bool, int)) and value is not None:
        raise error(layer, key, value, "true or false")
    return bool(value)


def choice(layer, key: str, allowed: tuple, default=REQUIRED) -> str:
    """One of `allowed` (strings, compared lower-case as Keras does for padding)."""
    value = raw(layer, key, default)
    if not isinstance(value, str) or value.lower() not in allowed:
        raise error(layer, key, value, "one of " + ", ".join(repr(a) for a in allowed))
    return value.lower()


def axes(layer, key: str, default=REQUIRED) -> int | tuple[int, ...]:
    """An axis or a list of axes (integers)."""
    value = raw(layer, key, default)
    if is_int(value):
        return int(value)
    if isinstance(value, (list, tuple)) and value and all(map(is_int, value)) \
            and len(set(value)) == len(value):
        return tuple(int(v) for v in value)
    raise error(layer, key, value, "an integer axis or a list of different ones")


def activation(layer, key: str = "activation", default=None):
    """An activation as configs store it: a name, null, or a serialized dict (its name is read
    by layers/activation_functions.py, which refuses the ones kerasgl does not know)."""
    value = raw(layer, key, default)
    if value is None or isinstance(value, str):
        return value
    inner = value.get("config") if isinstance(value, dict) else None
    named = isinstance(value, dict) and (
        isinstance(inner, str) or (isinstance(inner, dict) and isinstance(inner.get("name"), str))
        or (inner is None and isinstance(value.get("class_name"), str)))
    if not named:
        raise error(layer, key, value, "an activation name or a serialized activation")
    return value
