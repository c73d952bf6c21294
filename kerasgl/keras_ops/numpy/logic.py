"""keras.ops with bool results or int32 / bool arguments, recorded in Keras 3 graphs: comparisons
(greater ... not_equal), logical ops, where, the float classifications (isnan, isinf, isfinite,
isposinf, isneginf, signbit) and negative / absolute / square / sign of int32 and bool tensors.

A bool is a 0 / 1 word (tensors/tensor.py); ops/typed.py reads each operand's words by its dtype.
Result dtypes are Keras's (JAX backend), checked against live Keras in
tests/test_op_nodes_bool_int.py.
"""
from __future__ import annotations

from ...layers.typed_shapes import promote
from ...ops import creation
from ...ops import typed as typed_ops
from ...tensors import ownership
from ...tensors.tensor import retag
from ..node import (TYPED_FORMS, BroadcastingOp, OpNode, _shape, broadcast_dims, checked_operand,
                    register_op)

_COMPARISONS = {"Greater": "gt", "GreaterEqual": "ge", "Less": "lt", "LessEqual": "le",
                "Equal": "eq", "NotEqual": "ne"}


@register_op(*_COMPARISONS)
class CompareOp(BroadcastingOp):
    """x1 <op> x2 -> bool, on float32 / int32 / bool tensors and numbers broadcast together:
    compared in float32 when either is float32, else as integers. NaN compares false (but !=)."""
    shaders = ("typed_binary.comp",)
    output_dtype = "bool"

    def result_dtype(self, bound, dtypes):
        checked_operand(self, bound["x1"], "x1")
        checked_operand(self, bound["x2"], "x2")
        return "bool"

    def run(self, bound):
        return typed_ops.binary(_COMPARISONS[self.class_name], bound["x1"], bound["x2"], "bool")


_LOGICAL = {"LogicalAnd": "and", "LogicalOr": "or", "LogicalXor": "xor"}


@register_op(*_LOGICAL)
class LogicalOp(CompareOp):
    """The truth (nonzero; NaN is true) of each operand, combined -> bool."""

    def run(self, bound):
        return typed_ops.binary(_LOGICAL[self.class_name], bound["x1"], bound["x2"], "bool")


@register_op("LogicalNot")
class LogicalNotOp(OpNode):
    shaders = ("typed_unary.comp",)
    output_dtype = "bool"

    def result_dtype(self, bound, dtypes):
        checked_operand(self, bound["x"], "x")
        return "bool"

    def output_shape(self, bound):
        return _shape(bound["x"])

    def run(self, bound):
        x = bound["x"]
        return typed_ops.unary("float_not" if x.dtype == "float32" else "int_not", x, "bool")


@register_op("Where")
class WhereOp(OpNode):
    """where(condition, x1, x2): x1 where the condition is nonzero, else x2, all three broadcast
    together; the result has Keras's result_type of x1 and x2 (typed_shapes.promote). The
    one-argument form (the indices of nonzero values) has a shape that depends on the values:
    refused at load."""
    params = ("condition", "x1", "x2")
    shaders = ("where.comp", "typed_unary.comp")

    def result_dtype(self, bound, dtypes):
        if bound.get("x1") is None or bound.get("x2") is None:
            raise self.unsupported("where(condition) with one argument (its output's shape "
                                   "depends on the values, which a GPU plan cannot have)")
        if operand_is_number(bound["condition"]):
            raise self.unsupported("a Python-number condition")
        checked_operand(self, bound["condition"], "condition")
        return promote(checked_operand(self, bound["x1"], "x1"),
                       checked_operand(self, bound["x2"], "x2"))

    def output_shape(self, bound):
        where = f"Layer '{self.name}'"
        shape = broadcast_dims(_shape(bound["condition"]), _shape(bound["x1"]), where)
        return broadcast_dims(shape, _shape(bound["x2"]), where)

    def run(self, bound):
        dtype = self.result_dtype(bound, set())
        return typed_ops.where(bound["condition"], bound["x1"], bound["x2"], dtype)


def operand_is_number(value) -> bool:
    return isinstance(value, (bool, int, float))


# Operation class -> (typed_unary.comp op on float32, on int32, on bool); None: a constant
# (False, or True for isfinite) since an integer is never NaN or infinite.
_CLASSIFY = {"Isnan": ("isnan", None, None), "Isinf": ("isinf", None, None),
             "Isfinite": ("isfinite", None, None), "Isposinf": ("isposinf", None, None),
             "Isneginf": ("isneginf", None, None), "Signbit": ("signbit", "int_signbit", None)}


@register_op(*_CLASSIFY)
class ClassifyOp(OpNode):
    """isnan / isinf / isfinite / isposinf / isneginf / signbit -> bool, told from the float's
    bits (signbit(-0.0) and signbit of a negative NaN are true, as jnp's). Of int32 / bool
    tensors as Keras: never NaN or infinite, signbit where negative."""
    shaders = ("typed_unary.comp", "fill.comp")
    output_dtype = "bool"

    def result_dtype(self, bound, dtypes):
        checked_operand(self, bound["x"], "x")
        return "bool"

    def run(self, bound):
        x = bound["x"]
        op = _CLASSIFY[self.class_name][("float32", "int32", "bool").index(x.dtype)]
        if op is not None:
            return typed_ops.unary(op, x, "bool")
        value = 1 if self.class_name == "Isfinite" else 0
        return ownership.tidy.run(lambda: retag(creation.fill(x.shape, value, "int32"), "bool"))


# Operation class -> its typed_unary.comp op on int32; on bool: "copy" (the same values), the
# dtype Keras gives ("int32" for square of a bool), or None where jnp refuses a bool.
_INT_UNARY = {"Negative": ("int_neg", None), "Absolute": ("int_abs", "copy"),
              "Abs": ("int_abs", "copy"), "Square": ("int_square", "int32"),
              "Sign": ("int_sign", None), "Relu": ("relu", None)}


class IntUnaryOp(OpNode):
    """negative / absolute / square / sign / relu of an int32 tensor -> int32 (wrapping as XLA's
    int32); of a bool as Keras: absolute is the same bool, square an int32 0 / 1; negative, sign
    and relu of a bool are refused (jnp refuses the first two). The float32 forms are
    keras_ops/node.py's UnaryOp and numpy/elementwise_math.py's MathUnaryOp; this class runs (TYPED_FORMS)
    where the argument is not float32."""
    shaders = ("typed_unary.comp",)

    def result_dtype(self, bound, dtypes):
        dtype = checked_operand(self, bound["x"], "x")
        if dtype == "float32":
            raise self.unsupported("a float32 argument here")     # not reached: TYPED_FORMS
        if dtype == "int32":
            return "int32"
        form = _INT_UNARY[self.class_name][1]
        if form is None:
            raise self.unsupported(f"{self.class_name.lower()} of a bool (jnp refuses it)")
        return "bool" if form == "copy" else form

    def run(self, bound):
        x = bound["x"]
        dtype = self.result_dtype(bound, {x.dtype})
        if x.dtype == "int32" or dtype == "int32":
            if x.dtype == "bool":
                return typed_ops.convert(x, "int32")          # 0 / 1 squared
            op = _INT_UNARY[self.class_name][0]
            if op == "relu":
                return typed_ops.binary("maximum", x, 0, "int32")
            return typed_ops.unary(op, x, "int32")
        return typed_ops.copy(x)


for _name in _INT_UNARY:
    TYPED_FORMS[_name] = IntUnaryOp
