"""Element-wise TensorFlow functions: arithmetic, comparisons, logical ops, math functions, casts,
where, clip_by_value, bias_add, add_n and zeros_like / ones_like.

TensorFlow does not promote: both operands of a binary op have one dtype, a Python number
taking the tensor's. float32 arithmetic runs in binary.comp (and math_extra.glsl for floormod),
int32 arithmetic and every comparison / logical op in typed_binary.comp (ops/typed.py).
Operations whose TensorFlow result kerasgl cannot hold (an int32 true division is float64) are
refused at load. Known int32 values (shape arithmetic: `tf.shape(x)[1] * 6`) are computed at
load too (values.py).
"""
from __future__ import annotations

import numpy as np

from ...ops import creation, elementwise, layout, math_extra, math_unary, typed as typed_ops
from ..typed_shapes import broadcast_dims
from .arguments import is_tensor
from .functions import TFFunction, register
from .values import combine, convert

_FLOAT_OPS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "maximum",
              "minimum": "minimum", "pow": "pow", "squared_difference": "squared_difference",
              "divide_no_nan": "divide_no_nan", "floormod": "mod"}
_INT_OPS = {"add": "add", "sub": "sub", "mul": "mul", "maximum": "maximum",
            "minimum": "minimum", "floordiv": "floordiv", "floormod": "mod"}
# Known int32 values through shape arithmetic (Python's // and % floor, as TensorFlow's ints).
_VALUE_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": "multiply",
              "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b,
              "maximum": max, "minimum": min}
COMPARISONS = {"math.equal": "eq", "math.not_equal": "ne", "math.greater": "gt",
               "math.greater_equal": "ge", "math.less": "lt", "math.less_equal": "le"}


def shape_of(value) -> tuple:
    """A tensor operand's shape; a number's (); a constant list's numpy shape."""
    return tuple(value.shape) if is_tensor(value) else np.shape(value)


class Binary(TFFunction):
    """f(x, y) broadcast together; fixed `op` (arithmetic, COMPARISONS' codes or a logical op)."""
    params = ("x", "y")
    dtype = "float32"

    @property
    def shaders(self):
        if self.fixed.get("kind", "arithmetic") != "arithmetic" or self.dtype != "float32":
            return ("typed_binary.comp",)
        return ("binary.comp", "math_unary.comp") if self.fixed["op"] == "floordiv" \
            else ("binary.comp",)

    def plan(self, args):
        op = self.fixed["op"]
        dtypes = {args.dtype(p) for p in self.params if is_tensor(args.values.get(p))}
        if len(dtypes) != 1:
            raise self.unsupported(f"operands of dtypes {sorted(dtypes)} (TensorFlow takes one "
                                   "dtype)" if dtypes else "no tensor operand")
        (self.dtype,) = dtypes
        kind = self.fixed.get("kind", "arithmetic")
        if kind == "logical" and self.dtype != "bool":
            raise self.unsupported(f"{self.dtype} operands (logical ops take bools)")
        if kind == "arithmetic" and self.dtype == "bool":
            raise self.unsupported("bool operands")
        if kind == "arithmetic" and self.dtype == "int32" and op not in _INT_OPS:
            raise self.unsupported(f"int32 operands (TensorFlow's {op} of int32 is float64 or "
                                   "not defined)" if op == "div" else f"int32 operands of {op}")
        x, y = (self.operand(args, p, self.dtype) for p in self.params)
        for value in (x, y):
            if not is_tensor(value) and self.dtype == "int32" and value != int(value):
                raise self.unsupported(f"the number {value} beside an int32 tensor")
        self.out_dtype = self.dtype if kind == "arithmetic" else "bool"
        return broadcast_dims(shape_of(x), shape_of(y), f"Layer '{self.layer.name}'")

    def value(self, args):
        op = self.fixed["op"]
        if self.out_dtype != "int32" or op not in _VALUE_OPS:
            return None
        a, b = (self.operand_value(args, p) for p in self.params)
        return None if a is None or b is None else combine(_VALUE_OPS[op], a, b)

    def run(self, args):
        op, kind = self.fixed["op"], self.fixed.get("kind", "arithmetic")
        x, y = (self.operand(args, p) for p in self.params)
        if kind != "arithmetic":
            return typed_ops.binary(op, x, y, "bool")
        if self.dtype == "int32":
            x, y = (v if is_tensor(v) else int(v) for v in (x, y))
            return typed_ops.binary(_INT_OPS[op], x, y, "int32")
        if op == "floordiv":      # TensorFlow's float FloorDiv: floor(x / y)
            return math_unary.math_unary("floor", elementwise.div(x, y))
        return elementwise.binary(_FLOAT_OPS[op], x, y)


register(Binary, {
    "__operators__.add": {"op": "add"}, "math.add": {"op": "add"},
    "math.subtract": {"op": "sub"}, "__operators__.sub": {"op": "sub"},
    "math.multiply": {"op": "mul"}, "math.divide": {"op": "div"}, "math.truediv": {"op": "div"},
    "math.floordiv": {"op": "floordiv"}, "floor_div": {"op": "floordiv"},
    "math.floormod": {"op": "floormod"}, "math.mod": {"op": "floormod"},
    "math.pow": {"op": "pow"}, "math.maximum": {"op": "maximum"},
    "math.minimum": {"op": "minimum"}, "math.squared_difference": {"op": "squared_difference"},
    "math.divide_no_nan": {"op": "divide_no_nan"},
    "math.logical_and": {"op": "and", "kind": "logical"},
    "math.logical_or": {"op": "or", "kind": "logical"},
    "math.logical_xor": {"op": "xor", "kind": "logical"},
    **{name: {"op": code, "kind": "comparison"} for name, code in COMPARISONS.items()},
})


class EqualityOperator(Binary):
    """`a == b` / `a != b` on tensors: TensorFlow's __eq__(self, other)."""
    params = ("self", "other")


register(EqualityOperator, {"__operators__.eq": {"op": "eq", "kind": "comparison"},
                            "__operators__.ne": {"op": "ne", "kind": "comparison"}})


class Unary(TFFunction):
    """f(x) element by element: fixed `fn` of activations.glsl (`act`), math_unary.py (`math`)
    or math_extra.py (`extra`); `int_fn` the typed_unary.comp op for int32 tensors, if any."""
    params = ("x",)
    dtype = "float32"
    SHADERS = {"act": "unary.comp", "math": "math_unary.comp", "extra": "math_extra.comp",
               "no_nan": "binary.comp"}

    @property
    def shaders(self):
        if self.fixed.get("kind") == "logical" or self.dtype != "float32":
            return ("typed_unary.comp",)
        return (self.SHADERS[self.fixed.get("how", "act")],)

    def plan(self, args):
        x = args.tensor(self.params[0])
        self.dtype = x.dtype
        allowed = ("float32", "int32") if self.fixed.get("int_fn") else ("float32",)
        if self.fixed.get("kind") == "logical":
            allowed = ("bool",)
        if x.dtype not in allowed:
            raise self.unsupported(f"a {x.dtype} tensor")
        self.out_dtype = "bool" if self.fixed.get("kind") == "logical" else x.dtype
        return x.shape

    def run(self, args):
        x = args.tensor(self.params[0])
        fn, how = self.fixed["fn"], self.fixed.get("how", "act")
        if self.fixed.get("kind") == "logical":
            return typed_ops.unary("int_not", x, "bool")      # a bool's 0 / 1 word
        if self.dtype == "int32":
            return typed_ops.unary(self.fixed["int_fn"], x, "int32")
        if how == "math":
            return math_unary.math_unary(fn, x)
        if how == "extra":
            return math_extra.math_extra(fn, x)
        if how == "no_nan":          # reciprocal_no_nan: 1 / x, 0 where x is 0
            return elementwise.binary("divide_no_nan", 1.0, x)
        return elementwise.unary(fn, x, *self.fixed.get("params", ()))


register(Unary, {
    "math.negative": {"fn": "neg", "int_fn": "int_neg"},
    "math.abs": {"fn": "abs", "int_fn": "int_abs"},
    "math.square": {"fn": "square", "int_fn": "int_square"},
    "math.sign": {"fn": "sign", "how": "math", "int_fn": "int_sign"},
    "math.exp": {"fn": "exp"}, "math.log": {"fn": "log"}, "math.sqrt": {"fn": "sqrt"},
    "math.tanh": {"fn": "tanh"}, "nn.tanh": {"fn": "tanh"},
    "math.sigmoid": {"fn": "sigmoid"}, "nn.sigmoid": {"fn": "sigmoid"},
    **{f"math.{fn}": {"fn": fn, "how": "math"}
       for fn in ("floor", "ceil", "round", "reciprocal", "rsqrt", "erf", "expm1", "log1p")},
    "math.sin": {"fn": "sin", "how": "extra"}, "math.cos": {"fn": "cos", "how": "extra"},
    "math.reciprocal_no_nan": {"fn": "", "how": "no_nan"},
    "math.logical_not": {"fn": "", "kind": "logical"},
})


class Cast(TFFunction):
    """tf.cast to float32, int32 (int64 and the other integers: kerasgl's int32) or bool; float
    to int truncates toward zero, as TensorFlow."""
    params = ("x", "dtype")
    shaders = ("typed_unary.comp",)
    # kerasgl's dtypes (int64 held as int32, as kerasgl holds every integer tensor); casts to
    # float64, float16 or narrow integers compute or wrap differently: refused.
    TARGETS = {"float32": "float32", "int32": "int32", "int64": "int32", "bool": "bool"}

    def plan(self, args):
        x = args.tensor("x")
        target = str(args.static("dtype"))
        if target not in self.TARGETS:
            raise self.unsupported(f"dtype={target!r}")
        self.out_dtype = self.TARGETS[target]
        return x.shape

    def value(self, args):
        x = args.values["x"]
        return None if x.value is None else convert(x.value, self.out_dtype)

    def run(self, args):
        return typed_ops.convert(args.tensor("x"), self.out_dtype)


register(Cast, ["cast"])


class Where(TFFunction):
    """tf.where(condition, x, y): x where the condition holds, else y, broadcast together (the
    one-argument form, the coordinates of true entries, has a data-dependent shape: refused)."""
    params = ("condition", "x", "y")
    shaders = ("where.comp",)

    def plan(self, args):
        condition = args.tensor("condition")
        if "x" not in args or "y" not in args:
            raise self.unsupported("only a condition (the coordinates of its true entries have "
                                   "a size known only from the values)")
        if condition.dtype != "bool":
            raise self.unsupported(f"a {condition.dtype} condition")
        dtypes = {args.dtype(p) for p in ("x", "y") if is_tensor(args.values[p])}
        if len(dtypes) > 1:
            raise self.unsupported(f"x and y of dtypes {sorted(dtypes)}")
        self.out_dtype = dtypes.pop() if dtypes else args.dtype("x")
        x, y = (self.operand(args, p, self.out_dtype) for p in ("x", "y"))
        where = f"Layer '{self.layer.name}'"
        return broadcast_dims(broadcast_dims(condition.shape, shape_of(x), where), shape_of(y),
                              where)

    def run(self, args):
        x, y = (self.operand(args, p) for p in ("x", "y"))
        return typed_ops.where(args.tensor("condition"), x, y, self.out_dtype)


register(Where, ["where"])


class ClipByValue(TFFunction):
    """tf.clip_by_value(t, min, max): minimum(t, max), then maximum(., min), as TensorFlow."""
    params = ("t", "clip_value_min", "clip_value_max")
    shaders = ("binary.comp",)

    def plan(self, args):
        t = args.tensor("t")
        if t.dtype != "float32":
            raise self.unsupported(f"a {t.dtype} tensor")
        shape = t.shape
        for p in self.params[1:]:
            shape = broadcast_dims(shape, shape_of(self.operand(args, p, "float32")),
                                   f"Layer '{self.layer.name}'")
        return shape

    def run(self, args):
        low, high = (self.operand(args, p) for p in self.params[1:])
        return elementwise.maximum(elementwise.minimum(args.tensor("t"), high), low)


register(ClipByValue, ["clip_by_value"])


class BiasAdd(TFFunction):
    """tf.nn.bias_add(value, bias): bias along the last axis (NHWC) or axis 1 (NCHW)."""
    params = ("value", "bias", "data_format")
    shaders = ("binary.comp",)

    def plan(self, args):
        value = args.tensor("value")
        fmt = str(args.get("data_format", "NHWC"))
        if value.dtype != "float32" or fmt not in ("NHWC", "NWC", "NDHWC", "NCHW", "NCW", "NCDHW"):
            raise self.unsupported(f"a {value.dtype} value in data_format {fmt!r}")
        bias = self.operand(args, "bias", "float32")
        if len(shape_of(bias)) != 1:
            raise self.shape_error(f"the bias must be a vector, not of shape {shape_of(bias)}.")
        axis = 1 if fmt.startswith("NC") else value.ndim - 1
        self.bias_shape = (shape_of(bias)[0],) + (1,) * (value.ndim - axis - 1)
        if value.shape[axis] not in (None, self.bias_shape[0]):
            raise self.shape_error(f"{self.bias_shape[0]} biases for {value.shape[axis]} "
                                   "channels.")
        return value.shape

    def run(self, args):
        bias = layout.reshape(self.operand(args, "bias"), self.bias_shape)
        return elementwise.add(args.tensor("value"), bias)


register(BiasAdd, ["nn.bias_add"])


class AddN(TFFunction):
    """tf.math.add_n(inputs): their sum, left to right."""
    params = ("inputs",)
    shaders = ("binary.comp",)

    def plan(self, args):
        inputs = args.get("inputs")
        if not isinstance(inputs, list) or not inputs or not all(is_tensor(t) for t in inputs):
            raise self.unsupported("inputs that are not a list of tensors")
        if {t.dtype for t in inputs} != {"float32"}:
            raise self.unsupported("non-float32 inputs")
        shapes = [t.shape for t in inputs]
        if any(s != shapes[0] for s in shapes):
            raise self.shape_error(f"inputs of shapes {shapes} (add_n takes one shape).")
        return shapes[0]

    def run(self, args):
        inputs = args.get("inputs")
        total = inputs[0]
        for t in inputs[1:]:
            total = elementwise.add(total, t)
        return total if total is not inputs[0] else typed_ops.copy(total)


register(AddN, ["math.add_n"])


class FilledLike(TFFunction):
    """zeros_like / ones_like (fixed `fill`): the input's shape, its dtype unless one is given."""
    params = ("input", "dtype")
    shaders = ("fill.comp",)

    def plan(self, args):
        x = args.tensor("input")
        self.out_dtype = Cast.TARGETS.get(str(args.get("dtype", x.dtype)))
        if self.out_dtype is None:
            raise self.unsupported(f"dtype={args.get('dtype')!r}")
        return x.shape

    def run(self, args):
        fill = self.fixed["fill"]
        if self.out_dtype == "bool":
            return typed_ops.convert(creation.fill(args.tensor("input").shape, fill, "int32"),
                                     "bool")
        return creation.fill(args.tensor("input").shape, fill, self.out_dtype)


register(FilledLike, {"zeros_like": {"fill": 0}, "ones_like": {"fill": 1}})

