"""Operations Keras 3 records on symbolic tensors (`x + 3.0`, `keras.ops.mean(x, axis=1)`).

A functional model built with `keras.ops` calls keeps each call as a graph node whose module is
`keras.src.ops.<family>` and whose class name is the operation's (`Add`, `Multiply`, `Reshape`...).
Those names collide with layers (`keras.layers.Add` takes a list; `keras.ops.add` takes two
arguments, either of which may be a Python number), so they have their own registry, OP_CLASSES,
which the graph consults first for a node from an ops module.

The operation's own options (axis, keepdims, newshape, ...) are in the node's config; the call's
arguments (tensors and scalars) are in the node's args. Each op node runs existing ops; one whose
op module is missing, or an operation not listed here, is reported at load.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ShapeError
from ..ops import elementwise, layout, reduce, typed as typed_ops
from .activations import Pointwise
from .base import Layer, register_in
from .op_dtypes import binary_result, dtype_of, operand_dtype, typed

# Operation class -> the OpNode class that runs its int32 / bool form, where the class registered
# for it takes float32 only (Sign: op_nodes_math.py's; op_nodes_typed.py fills this in).
TYPED_FORMS: dict[str, type] = {}

OP_CLASSES: dict[str, type] = {}
OP_MODULE_PREFIXES = ("keras.src.ops", "keras.ops")
_NOT_OPTIONS = ("name", "trainable", "dtype")


def is_op_module(module) -> bool:
    return isinstance(module, str) and module.startswith(OP_MODULE_PREFIXES)


def register_op(*class_names: str):
    """Class decorator: this op node implements these Keras operation class names."""
    return register_in(OP_CLASSES, class_names)


@dataclass(frozen=True)
class Symbolic:
    """A tensor during shape inference: its shape (None for unknown dims)."""
    shape: tuple


def _shape(value):
    return value.shape if isinstance(value, Symbolic) else ()


def _symbols(value):
    """The Symbolic leaves of a bound argument structure."""
    if isinstance(value, Symbolic):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _symbols(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _symbols(item)


class OpNode(Layer):
    """Base of op nodes. `params` names the operation's call parameters, in order."""
    params: tuple = ("x",)
    mask_behaviour = "drops"      # keras.ops carry no Keras masks
    weight_arrays = 0
    # The dtypes its tensor arguments may have (op_dtypes.py): others are refused at load. None:
    # not checked (the mask ops of layers/masking.py take int32 token ids and 0/1 floats alike).
    input_dtypes: tuple | None = None
    # The output has its (common) input dtype, else output_dtype's (views, word copies).
    keeps_dtype = False
    output_dtype = "float32"
    typed_form = None          # the TYPED_FORMS node run instead, when inference chose it

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.options = {k: v for k, v in (self.config or {}).items() if k not in _NOT_OPTIONS}

    def bind(self, args, kwargs) -> dict:
        """The call's arguments by parameter name (Keras may pass them by position or name)."""
        if len(args) > len(self.params):
            raise self.shape_error(f"expected at most {len(self.params)} arguments, got {len(args)}.")
        bound = dict(zip(self.params, args))
        for key, value in kwargs.items():
            if key in bound:
                raise self.shape_error(f"argument {key!r} given twice.")
            bound[key] = value
        return bound

    def opt(self, bound: dict, key: str, default=None):
        """An option from the call's arguments, else from the node's config."""
        return bound[key] if key in bound else self.options.get(key, default)

    def node_output_shape(self, args, kwargs):
        """Shape inference over the node's arguments (Symbolic leaves for tensors), the result
        carrying its dtype (op_dtypes.TypedShape) when that is not float32."""
        bound = self.bind(args, kwargs)
        dtypes = {dtype_of(leaf.shape) for leaf in _symbols(bound)}
        form = TYPED_FORMS.get(self.class_name)
        if form is not None and not isinstance(self, form) and dtypes - {"float32"}:
            self.typed_form = form(self.spec, self.keras_major)
            return self.typed_form.node_output_shape(args, kwargs)
        self.typed_form = None
        dtype = self.result_dtype(bound, dtypes)
        shape = self.output_shape(bound)
        if isinstance(shape, list):
            return [typed(s, dtype) for s in shape]
        return typed(shape, dtype)

    def result_dtype(self, bound: dict, dtypes: set) -> str:
        """The output's dtype from the call's arguments (their tensors' dtypes: `dtypes`), or
        an unsupported() error for arguments this operation does not take."""
        allowed = set(self.input_dtypes or dtypes)
        if self.keeps_dtype and "int32" in allowed:
            allowed.add("bool")          # word copies: a bool is a 0 / 1 word, as an int32
        for dtype in sorted(dtypes - allowed):
            raise self.unsupported(f"a {dtype} argument (this operation takes "
                                   f"{' or '.join(self.input_dtypes)} tensors here)")
        if self.keeps_dtype and len(dtypes) > 1:
            raise self.unsupported(f"arguments of mixed dtypes {sorted(dtypes)}")
        return dtypes.pop() if self.keeps_dtype and dtypes else self.output_dtype

    def call(self, *args, **kwargs):
        if self.typed_form is not None:
            return self.typed_form.call(*args, **kwargs)
        return self.run(self.bind(args, kwargs))

    # subclasses:
    def output_shape(self, bound):
        return _shape(bound["x"])

    def run(self, bound):
        raise NotImplementedError


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


# -------------------------------------------------------------------------------------------------
# Elementwise
# -------------------------------------------------------------------------------------------------
_BINARY = {"Add": "add", "Subtract": "sub", "Multiply": "mul", "Divide": "div", "TrueDivide": "div",
           "Power": "pow", "Maximum": "maximum", "Minimum": "minimum", "FloorDivide": "floordiv",
           "Mod": "mod"}
_FLOAT_NAMES = {"floordiv": "floor_divide"}     # binary.comp's name for it, where it differs


class BroadcastingOp(OpNode):
    """An op of two arguments (tensors or numbers) broadcast together as numpy does."""
    params = ("x1", "x2")

    def output_shape(self, bound):
        return broadcast_dims(_shape(bound["x1"]), _shape(bound["x2"]), f"Layer '{self.name}'")


def checked_operand(layer: OpNode, value, name: str) -> str:
    """The dtype of a tensor or number argument (op_dtypes.operand_dtype); anything else, or an
    integer int32 words cannot hold, is unsupported."""
    dtype = operand_dtype(value)
    if dtype is None:
        raise layer.unsupported(f"{name}={value!r} (a tensor or a number is needed)")
    if dtype == "int32" and isinstance(value, int) and not -2 ** 31 <= value < 2 ** 31:
        raise layer.unsupported(f"{name}={value} (outside int32)")
    return dtype


@register_op(*_BINARY)
class BinaryOp(BroadcastingOp):
    """x1 op x2 on float32, int32 and bool tensors and Python numbers, typed as Keras types them
    (op_dtypes.binary_result): float32 results on binary.comp (int and bool operands converted
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
        (a, made_a), (b, made_b) = typed_ops.as_float(bound["x1"]), typed_ops.as_float(bound["x2"])
        try:
            op = _BINARY[self.class_name]
            return elementwise.binary(_FLOAT_NAMES.get(op, op), a, b, epilogue)
        finally:
            for made in (made_a, made_b):
                if made is not None:
                    made.dispose()


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
        value = typed_ops.binary(how, bound["x1"], bound["x2"], dtype)
        if out_dtype == "float32":             # exp / log / sqrt / tanh of an int32 or bool
            try:
                return UnaryOp.run_on(self.epilogue, value)
            finally:
                value.dispose()
        op = self._INT_EPILOGUES[self.epilogue.function]
        try:
            if op == "relu":
                return typed_ops.binary("maximum", value, 0, "int32")
            return typed_ops.unary(op, value, "int32")
        finally:
            value.dispose()


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
    op_nodes_typed.py's IntUnaryOp (TYPED_FORMS); the others are refused at load (Keras's
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
        x, made = typed_ops.as_float(x)
        try:
            return elementwise.unary(pointwise.function.removeprefix("act_"), x,
                                     *pointwise.params)
        finally:
            if made is not None:
                made.dispose()

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


# Clip: layers/op_nodes_float.py.


# -------------------------------------------------------------------------------------------------
# Reductions
# -------------------------------------------------------------------------------------------------
def _axes(axis, rank: int, where: str) -> tuple:
    if axis is None:
        return tuple(range(rank))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if not -rank <= a < rank:
            raise ShapeError(f"{where}: axis {a} is out of range for rank {rank}.")
    return tuple(sorted({a % rank for a in axes}))


@register_op("Mean", "Sum", "Max", "Min")
class ReduceOp(OpNode):
    """sum / mean / max / min over axes, typed as Keras types them (sum of bool or int32: int32;
    max / min: the input's dtype; mean: float32). int32 and bool sums, maxima and minima are
    exact int32 reductions (sums wrap around as XLA's); a mean of them is taken in float32."""
    input_dtypes = ("float32",)
    params = ("x", "axis", "keepdims")
    shaders = ("reduce.comp", "typed_unary.comp")
    _RESULTS = {"Sum": {"bool": "int32", "int32": "int32"}, "Mean": {"bool": "float32"},
                "Max": {}, "Min": {}}

    def result_dtype(self, bound, dtypes):
        if type(self) is not ReduceOp or dtypes == {"float32"}:
            return super().result_dtype(bound, dtypes)
        dtype = checked_operand(self, bound["x"], "x")
        table = self._RESULTS[self.class_name]
        return table.get(dtype, "float32" if self.class_name == "Mean" else dtype)

    def reduced(self, op: str, x, bound, out_dtype: str):
        """reduce(op) of x as out_dtype: int32 words for an int32 / bool sum, max or min (bool
        words are int32 ones), else float32 (an int32 / bool x converted first)."""
        axis = self.opt(bound, "axis")
        axis = tuple(axis) if isinstance(axis, list) else axis
        keepdims = bool(self.opt(bound, "keepdims", False))
        if x.dtype != "float32" and op != "mean" and out_dtype in ("int32", "bool"):
            return reduce.reduce_words(op, x, axis, keepdims, out_dtype)
        source, made = typed_ops.as_float(x)
        try:
            result = reduce.reduce(op, source, axis, bool(self.opt(bound, "keepdims", False)))
        finally:
            if made is not None:
                made.dispose()
        if out_dtype == "float32":
            return result
        try:
            return typed_ops.convert(result, out_dtype)
        finally:
            result.dispose()

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        axes = _axes(self.opt(bound, "axis"), len(shape), f"Layer '{self.name}'")
        if self.opt(bound, "keepdims", False):
            return tuple(1 if d in axes else n for d, n in enumerate(shape))
        return tuple(n for d, n in enumerate(shape) if d not in axes)

    def run(self, bound):
        x = bound["x"]
        return self.reduced(self.class_name.lower(), x, bound,
                            self.result_dtype(bound, {x.dtype}))


# -------------------------------------------------------------------------------------------------
# Layout: reshape and friends are views (no data moves); transpose moves data.
# -------------------------------------------------------------------------------------------------
@register_op("Reshape")
class ReshapeOp(OpNode):
    params = ("x", "newshape")
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def target(self, bound):
        shape = self.opt(bound, "newshape", self.opt(bound, "new_shape"))
        return (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)

    def output_shape(self, bound):
        source, target = _shape(bound["x"]), self.target(bound)
        if -1 in target and None not in source:
            known = math.prod(d for d in target if d != -1)
            size = math.prod(source)
            if known == 0 or size % known:
                raise self.shape_error(f"cannot reshape {list(source)} to {list(target)}.")
            return tuple(size // known if d == -1 else d for d in target)
        if None not in source and math.prod(source) != math.prod(target):
            raise self.shape_error(f"cannot reshape {list(source)} to {list(target)}.")
        return tuple(None if d == -1 else d for d in target)

    def run(self, bound):
        return layout.reshape(bound["x"], self.target(bound))


class _ReshapingOp(OpNode):
    """An op that only changes the shape: new_shape(shape, bound) for symbolic and real inputs
    alike, run as a reshape (a view)."""
    params = ("x", "axis")
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def new_shape(self, shape, bound):
        raise NotImplementedError

    def output_shape(self, bound):
        return self.new_shape(_shape(bound["x"]), bound)

    def run(self, bound):
        x = bound["x"]
        return layout.reshape(x, self.new_shape(x.shape, bound))


@register_op("Squeeze")
class SqueezeOp(_ReshapingOp):
    def new_shape(self, shape, bound):
        axis = self.opt(bound, "axis")
        if axis is None:
            return tuple(n for n in shape if n != 1)
        axes = _axes(axis, len(shape), f"Layer '{self.name}'")
        for a in axes:
            if shape[a] not in (1, None):
                raise self.shape_error(f"cannot squeeze axis {a} of size {shape[a]} in {list(shape)}.")
        return tuple(n for d, n in enumerate(shape) if d not in axes)


@register_op("ExpandDims")
class ExpandDimsOp(_ReshapingOp):
    def new_shape(self, shape, bound):
        axis = self.opt(bound, "axis")
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        rank = len(shape) + len(axes)
        positions = sorted(a % rank for a in axes)
        out, source = [], iter(shape)
        for d in range(rank):
            out.append(1 if d in positions else next(source))
        return tuple(out)


@register_op("Transpose")
class TransposeOp(OpNode):
    params = ("x", "axes")
    input_dtypes = ("float32", "int32")
    keeps_dtype = True
    shaders = ("transpose.comp",)

    def perm(self, rank, bound):
        axes = self.opt(bound, "axes")
        if axes is None:
            return tuple(range(rank - 1, -1, -1))
        return tuple(int(a) % rank for a in axes)

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        return tuple(shape[a] for a in self.perm(len(shape), bound))

    def run(self, bound):
        x = bound["x"]
        return layout.transpose(x, self.perm(x.ndim, bound))


# Matmul, Concatenate, Softmax / LogSoftmax: layers/op_nodes_float.py.
