"""keras.ops.numpy (keras/src/ops/numpy.py) arithmetic as recorded in Keras 3 graphs: the binary
operators with numpy broadcasting and Python-number operands (add ... mod, power, maximum,
minimum), the elementwise unary functions that activations.glsl has (negative, abs, exp, log,
sqrt, square, tanh, and keras.ops.nn's relu, gelu, silu... which share the kernel: fusable into
the op before), and clip.

Their dtypes are Keras's (layers/typed_shapes.py): int32 and bool operands promote as Keras's
result_type does; integer forms run in numpy/logic.py's typed nodes (TYPED_FORMS).
"""
from __future__ import annotations

from ...layers.activation_functions import Pointwise
from ...layers.typed_shapes import binary_result
from ...ops import elementwise
from ...ops import typed as typed_ops
from ...tensors import ownership
from ..node import BroadcastingOp, OpNode, checked_operand, register_op

# -------------------------------------------------------------------------------------------------
# Elementwise
# -------------------------------------------------------------------------------------------------
_BINARY = {"Add": "add", "Subtract": "sub", "Multiply": "mul", "Divide": "div", "TrueDivide": "div",
           "Power": "pow", "Maximum": "maximum", "Minimum": "minimum", "FloorDivide": "floordiv",
           "Mod": "mod"}


_FLOAT_NAMES = {"floordiv": "floor_divide"}     # binary.comp's name for it, where it differs


@register_op(*_BINARY)
class BinaryOp(BroadcastingOp):
    """x1 op x2 on float32, int32 and bool tensors and Python numbers, typed as Keras types them
    (typed_shapes.binary_result): float32 results on binary.comp (int and bool operands converted
    to float32 first, as Keras promotes them); int32 and bool results, floor_divide and mod on
    typed_binary.comp with jnp's integer semantics (floor division, the sign of the divisor;
    XLA's x // 0 = -1 or -2 and x % 0 = 0); float floor_divide and mod as jnp's, on binary.comp
    (math_extra.glsl: an exact remainder at any ratio of the operands)."""
    shaders = ("binary.comp", "typed_binary.comp", "typed_unary.comp")

    def plan(self, x1, x2) -> tuple[str, str]:
        a, b = checked_operand(self, x1, "x1"), checked_operand(self, x2, "x2")
        try:
            return binary_result(_BINARY[self.class_name], a, b)
        except ValueError as exc:
            raise self.unsupported(str(exc)) from None

    def result_dtype(self, bound, dtypes):
        return self.plan(bound["x1"], bound["x2"])[0]

    def fused_with_activation(self, pointwise):
        if _BINARY[self.class_name] in ("floordiv", "mod"):
            return None               # typed_binary.comp has no epilogue
        return BinaryOpWithActivation(self, pointwise)

    def run(self, bound):
        dtype, how = self.plan(bound["x1"], bound["x2"])
        if how != "float":
            return typed_ops.binary(how, bound["x1"], bound["x2"], dtype)
        return self.run_float(bound)

    def run_float(self, bound, epilogue=None):
        """binary.comp on the operands as float32 (converted copies freed after)."""
        op = _BINARY[self.class_name]
        return ownership.tidy.run(lambda: elementwise.binary(
            _FLOAT_NAMES.get(op, op), typed_ops.as_float(bound["x1"])[0],
            typed_ops.as_float(bound["x2"])[0], epilogue))


class BinaryOpWithActivation(BinaryOp):
    """A keras.ops binary operation node (`x1 + x2`, recorded by Keras 3 as an op node) with the
    pointwise activation that followed it, fused by compiler/fusion.py: one dispatch, not two."""
    shaders = ("binary.comp",)

    def __init__(self, op_node: BinaryOp, pointwise):
        super().__init__(op_node.spec, op_node.keras_major)
        self.epilogue = pointwise

    def fused_with_activation(self, pointwise):
        return None                   # one epilogue already

    # The epilogues an int32 result takes (Keras keeps int32 through them): typed_unary.comp's.
    _INT_EPILOGUES = {"act_neg": "int_neg", "act_abs": "int_abs", "act_square": "int_square",
                      "act_relu": "relu"}
    _FLOAT_EPILOGUES = ("act_exp", "act_log", "act_sqrt", "act_tanh")

    def result_dtype(self, bound, dtypes):
        dtype, how = self.plan(bound["x1"], bound["x2"])
        if how != "float" and self.epilogue.function in self._FLOAT_EPILOGUES:
            return "float32"
        if how != "float" and (dtype != "int32" or self.epilogue.params
                               or self.epilogue.function not in self._INT_EPILOGUES):
            raise self.unsupported(f"a {dtype} {self.class_name} followed by the activation "
                                   f"'{self.epilogue.function}' (fused into it at load)")
        return dtype

    def run(self, bound):
        dtype, how = self.plan(bound["x1"], bound["x2"])
        if how == "float":
            return self.run_float(bound, self.epilogue)
        out_dtype = self.result_dtype(bound, set())

        def compute():
            value = typed_ops.binary(how, bound["x1"], bound["x2"], dtype)
            if out_dtype == "float32":             # exp / log / sqrt / tanh of an int32 or bool
                return UnaryOp.run_on(self.epilogue, value)
            op = self._INT_EPILOGUES[self.epilogue.function]
            if op == "relu":
                return typed_ops.binary("maximum", value, 0, "int32")
            return typed_ops.unary(op, value, "int32")
        return ownership.tidy.run(compute)


# Unary operations whose result of an int32 / bool argument is float32 in Keras.
FLOAT_OF_INTS = ("Exp", "Log", "Sqrt", "Tanh")


# Operation class -> (function in activations.glsl without the act_ prefix, its parameters).
_UNARY = {
    "Negative": "neg", "Absolute": "abs", "Abs": "abs", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
    "Square": "square", "Tanh": "tanh", "Relu": "relu", "Relu6": "relu6", "Sigmoid": "sigmoid",
    "Silu": "silu", "Swish": "silu", "Softplus": "softplus", "Softsign": "softsign", "Selu": "selu",
    "HardSilu": "hard_silu", "HardSwish": "hard_silu", "HardSigmoid": "hard_sigmoid",
    "Mish": "mish", "Elu": "elu", "LeakyRelu": "leaky_relu", "Gelu": "gelu",
}


@register_op(*_UNARY)
class UnaryOp(OpNode):
    """A function of activations.glsl. Of int32 / bool tensors: exp, log, sqrt and tanh give
    float32 as in Keras (the argument converted first); negative, absolute, square and relu are
    numpy/logic.py's IntUnaryOp (TYPED_FORMS); the others are refused at load (Keras's
    symbolic dtype for them is the integer one)."""
    input_dtypes = ("float32",)
    shaders = ("unary.comp", "typed_unary.comp")

    def result_dtype(self, bound, dtypes):
        if dtypes and dtypes <= {"int32", "bool"} and self.class_name in FLOAT_OF_INTS:
            return "float32"
        return super().result_dtype(bound, dtypes)

    def function(self, bound):
        name = _UNARY[self.class_name]
        if name == "elu":
            return name, (float(self.opt(bound, "alpha", 1.0)),)
        if name == "leaky_relu":
            return name, (float(self.opt(bound, "negative_slope", 0.2)),)
        if name == "gelu":
            return ("gelu_tanh" if self.opt(bound, "approximate", True) else "gelu"), ()
        return name, ()

    @staticmethod
    def run_on(pointwise, x):
        """The activations.glsl function of `pointwise` on x as float32 (converted first)."""
        return ownership.tidy.run(lambda: elementwise.unary(
            pointwise.function.removeprefix("act_"), typed_ops.as_float(x)[0], *pointwise.params))

    def as_pointwise(self, args, kwargs):
        """A subclass whose run computes anything else overrides this (None)."""
        try:
            name, params = self.function(self.bind(args, kwargs))
        except Exception:       # arguments fusion cannot read at load: not fused
            return None
        return Pointwise(f"act_{name}", tuple(params))

    def run(self, bound):
        name, params = self.function(bound)
        return self.run_on(Pointwise(f"act_{name}", tuple(params)), bound["x"])


@register_op("Clip")
class ClipOp(OpNode):
    input_dtypes = ("float32",)
    params = ("x", "x_min", "x_max")
    shaders = ("binary.comp",)

    def run(self, bound):
        x_min, x_max = float(self.opt(bound, "x_min")), float(self.opt(bound, "x_max"))
        return ownership.tidy.run(
            lambda: elementwise.minimum(elementwise.maximum(bound["x"], x_min), x_max))
