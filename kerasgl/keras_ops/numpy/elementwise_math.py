"""keras.ops.numpy (keras/src/ops/numpy.py) elementwise maths beyond numpy/arithmetic.py, with
float32 results (int32 arguments computed as float32, as Keras promotes them): rounding (floor,
ceil, round, sign), reciprocal, expm1 / log1p, trigonometric, hyperbolic, logarithmic and special
functions (ops/math_extra.py, written to stay accurate where GPU built-ins are loose: large
arguments of sin / cos, tiny ones of arcsinh...), and binary functions of two broadcast
arguments (arctan2, hypot, logaddexp...). keras.ops.math's rsqrt, erf, erfc and erfinv share
these kernels and live here with them. floor_divide and mod are numpy/arithmetic.py's BinaryOp.
"""
from __future__ import annotations

import numpy as np

from ...layers.typed_shapes import dtype_of
from ...ops import elementwise
from ...ops.arg_ops import cast
from ...ops.math_extra import math_extra
from ...ops.math_unary import math_unary
from ...tensors import ownership
from ..node import BroadcastingOp, OpNode, _shape, register_op

# Operation class -> function of shaders/math_extra.comp (without the fn_ prefix).
_EXTRA = {"Sin": "sin", "Cos": "cos", "Tan": "tan", "Arcsin": "arcsin", "Arccos": "arccos",
          "Arctan": "arctan", "Sinh": "sinh", "Cosh": "cosh", "Arcsinh": "arcsinh",
          "Arccosh": "arccosh", "Arctanh": "arctanh", "Log10": "log10", "Log2": "log2",
          "Exp2": "exp2", "Cbrt": "cbrt", "Trunc": "trunc", "Fabs": "fabs", "Sinc": "sinc",
          "Deg2rad": "deg2rad", "Rad2deg": "rad2deg", "Erfc": "erfc", "Erfinv": "erfinv",
          "I0": "i0", "NanToNum": "nan_to_num", "Threshold": "threshold"}


FLOAT32_MAX = float(np.finfo(np.float32).max)


# Where Keras keeps an int32 argument's dtype (trunc(int) is the int; the others' graphs say
# int32): refused for int32 arguments, which the rest take and compute as float32, as Keras does.
_INT_KEEPING = ("Trunc", "NanToNum", "Erfinv", "Threshold", "Fmod", "Fmax", "Fmin")


def _refuse_int_result(node: OpNode, *arguments) -> None:
    dtypes = {dtype_of(_shape(a)) for a in arguments if hasattr(a, "shape")}
    if node.class_name in _INT_KEEPING and "float32" not in dtypes and not any(
            isinstance(a, float) for a in arguments):
        raise node.unsupported(f"{' and '.join(sorted(dtypes))} arguments (Keras keeps their "
                               "integer dtype here; only float32 results run)")


def _as_float32(value):
    """value as float32: an int32 tensor is cast (a new tensor, the caller's tidy scope frees
    it)."""
    if getattr(value, "dtype", "float32") == "float32":
        return value
    return cast(value, "float32")


@register_op(*_EXTRA)
class MathExtraOp(OpNode):
    """One of _EXTRA's functions. NanToNum's replacements (nan, posinf, neginf: None for the
    largest float32 of that sign, as jnp.nan_to_num) and Threshold's threshold and default_value
    come from the node's config."""
    input_dtypes = ("float32", "int32")
    shaders = ("math_extra.comp", "cast.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.parameters()                 # unreadable options: refused at load

    def parameters(self) -> tuple:
        try:
            if self.class_name == "NanToNum":
                posinf, neginf = self.options.get("posinf"), self.options.get("neginf")
                return (float(self.options.get("nan", 0.0)),
                        FLOAT32_MAX if posinf is None else float(posinf),
                        -FLOAT32_MAX if neginf is None else float(neginf))
            if self.class_name == "Threshold":
                return (float(self.options["threshold"]), float(self.options["default_value"]))
        except (KeyError, TypeError, ValueError):
            raise self.unsupported(f"options {self.options!r} (numbers are needed)") from None
        return ()

    def output_shape(self, bound):
        _refuse_int_result(self, bound["x"])
        return super().output_shape(bound)

    def run(self, bound):
        x = bound["x"]
        return ownership.tidy.run(lambda: math_extra(_EXTRA[self.class_name], _as_float32(x),
                                                     *self.parameters()))


# Operation class -> binary function of shaders/math_extra.glsl (without the binary_ prefix).
_EXTRA_BINARY = {"Arctan2": "arctan2", "Hypot": "hypot", "Logaddexp": "logaddexp",
                 "Logaddexp2": "logaddexp2", "Fmod": "fmod", "Heaviside": "heaviside",
                 "DivideNoNan": "divide_no_nan", "Fmax": "fmax", "Fmin": "fmin",
                 "Nextafter": "nextafter"}


@register_op(*_EXTRA_BINARY)
class BinaryExtraOp(BroadcastingOp):
    """f(x1, x2) with numpy broadcasting, either argument a tensor or a number; int32 tensors
    computed as float32 where Keras's result is float32."""
    input_dtypes = ("float32", "int32")
    shaders = ("binary.comp", "binary_vec4.comp", "cast.comp")

    def output_shape(self, bound):
        _refuse_int_result(self, bound["x1"], bound["x2"])
        return super().output_shape(bound)

    def run(self, bound):
        return ownership.tidy.run(lambda: elementwise.binary(
            _EXTRA_BINARY[self.class_name], _as_float32(bound["x1"]), _as_float32(bound["x2"])))


@register_op("Ldexp")
class LdexpOp(BroadcastingOp):
    """x1 * 2**x2: float32 x1, int32 exponents x2 (Keras requires integer ones)."""
    input_dtypes = ("float32", "int32")
    shaders = ("cast.comp", "binary.comp", "binary_vec4.comp")

    def output_shape(self, bound):
        if dtype_of(_shape(bound["x1"])) != "float32":
            raise self.unsupported("an integer x1 tensor (a float32 one is needed)")
        return super().output_shape(bound)

    def run(self, bound):
        x1, x2 = bound["x1"], bound["x2"]
        if not hasattr(x2, "dtype"):
            return elementwise.binary("ldexp", x1, float(x2))
        return ownership.tidy.run(lambda: elementwise.binary("ldexp", x1, cast(x2, "float32")))


# Operation class -> function of shaders/math_unary.comp (without the math_ prefix).
_MATH = {"Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign",
         "Reciprocal": "reciprocal", "Rsqrt": "rsqrt", "Erf": "erf", "Expm1": "expm1",
         "Log1p": "log1p"}


@register_op(*_MATH)
class MathUnaryOp(OpNode):
    params = ("x", "decimals")
    shaders = ("math_unary.comp",)
    input_dtypes = ("float32",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.check(self.options)           # the config's options: refused with the other layers

    def check(self, bound):
        # round(x, decimals) scales by 10**decimals in Keras: only the plain rounding runs here.
        if self.class_name == "Round" and self.opt(bound, "decimals", 0) not in (0, None):
            raise self.unsupported(f"decimals={self.opt(bound, 'decimals')!r}")
        if self.class_name != "Round" and "decimals" in bound:
            raise self.shape_error("takes one argument.")

    def output_shape(self, bound):
        self.check(bound)
        return super().output_shape(bound)

    def run(self, bound):
        return math_unary(_MATH[self.class_name], bound["x"])
