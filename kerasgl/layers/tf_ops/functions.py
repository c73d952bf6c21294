"""The TensorFlow functions kerasgl runs, by the name tf.keras records, and what each one is.

A TFFunction is made per recorded call (its layer, its name, the fixed options of its table
entry). At load, `plan(args)` checks the arguments (refusing, naming the function and the
argument, what it cannot run exactly), uploads constant operands, records what `run` will need
and returns the output shape(s); `value(args)` gives the output's value where load can know it
(values.py). At predict, `run(args)` turns tensors into new tensors with kerasgl's ops.

tf.keras records the symbol a call dispatched to: tf.transpose is "compat.v1.transpose",
tf.shape "compat.v1.shape", `//` "compat.v1.floor_div". `lookup` finds a name as recorded, else
without its "compat.v1." prefix (the v1 spelling of a function kerasgl knows by its v2 name);
functions whose v1 form differs (the image.resize_* family) are entered under their v1 names.
"""
from __future__ import annotations

import numpy as np

from ...tensors.tensor import Tensor
from ..typed_shapes import typed
from .arguments import dtype_of_value, is_tensor
from .values import Sym, is_number

FUNCTIONS: dict[str, tuple[type, dict]] = {}
V1 = "compat.v1."


def register(cls, names):
    """Enter `cls` under each name; `names` maps a name to its fixed options (or is a list)."""
    entries = names.items() if isinstance(names, dict) else ((n, {}) for n in names)
    for name, fixed in entries:
        if name in FUNCTIONS:
            raise TypeError(f"tf.{name} is registered twice")
        FUNCTIONS[name] = (cls, dict(fixed))
    return cls


def lookup(name: str):
    """(class, fixed options) for a recorded function name, or None."""
    found = FUNCTIONS.get(name)
    if found is None and name.startswith(V1):
        found = FUNCTIONS.get(name[len(V1):])
    return found


class TFFunction:
    """One recorded call of a TensorFlow function (see the module's docstring)."""
    params: tuple = ("x",)          # TensorFlow's parameter names; the first is positional
    aliases: dict = {}              # compat.v1 keyword -> parameter
    shaders: tuple = ()

    def __init__(self, layer, name: str, **fixed):
        self.layer, self.name, self.fixed = layer, name, fixed
        self.constants: dict[str, Tensor] = {}
        self.out_dtype = "float32"      # set by plan: the output's dtype (every output's)

    # -- the contract ------------------------------------------------------------------------
    def check_recorded(self, first, kwargs: dict) -> None:
        """Refuse, when the layer is made, a recorded call that cannot run whatever the shapes
        (TensorRef leaves in the tensors' places)."""

    def plan(self, args):
        raise NotImplementedError

    def value(self, args):
        """The output's value (anything numpy turns into an object array), or None."""
        return None

    def run(self, args):
        raise NotImplementedError

    # -- helpers ---------------------------------------------------------------------------------
    def unsupported(self, what: str):
        return self.layer.unsupported(f"tf.{self.name} with {what}")

    def shape_error(self, message: str):
        return self.layer.shape_error(f"tf.{self.name}: {message}")

    def operand(self, args, name: str, dtype: str | None = None):
        """An operand of an elementwise or matrix op: a tensor as it is, a number as a number, a
        constant array uploaded once at load (owned by the layer) as `dtype` (default: its own)."""
        return self.lifted(name, args.values.get(name), args.loading, dtype)

    def lifted(self, key: str, value, loading: bool, dtype: str | None = None,
               numbers: bool = True):
        """`value` as operand (see operand); `key` names its upload among the call's constants.
        Without `numbers`, numbers are uploaded too (the operands of a join are tensors)."""
        if is_tensor(value) or (numbers and (is_number(value) or isinstance(value, bool))):
            return value
        if not loading:
            return self.constants[key]
        if value is None or isinstance(value, str):
            raise self.unsupported(f"{key}={value!r}")
        dtype = dtype or dtype_of_value(value)
        array = np.asarray(value, dtype={"float32": np.float32, "int32": np.int32,
                                         "bool": np.bool_}[dtype])
        self.constants[key] = self.layer.upload(array, dtype=dtype, name=key)
        return Sym(typed(array.shape, dtype))

    def operand_value(self, args, name: str):
        """The argument's value where load knows it (known_value), else None."""
        return known_value(args.values.get(name))


def known_value(value):
    """A tensor's known value, or a constant's (an object array); None where unknown."""
    if isinstance(value, Sym):
        return value.value
    if is_tensor(value) or value is None or isinstance(value, str):
        return None
    return np.asarray(value, dtype=object)
