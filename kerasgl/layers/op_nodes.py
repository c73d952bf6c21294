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
from ..ops import elementwise, layout, matmul, merge, reduce, softmax
from .activations import Pointwise
from .base import Layer, register_in
from .op_dtypes import dtype_of, typed

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
        for dtype in sorted(dtypes - set(self.input_dtypes or dtypes)):
            raise self.unsupported(f"a {dtype} argument (this operation takes "
                                   f"{' or '.join(self.input_dtypes)} tensors here)")
        if self.keeps_dtype and len(dtypes) > 1:
            raise self.unsupported(f"arguments of mixed dtypes {sorted(dtypes)}")
        dtype = dtypes.pop() if self.keeps_dtype and dtypes else self.output_dtype
        shape = self.output_shape(bound)
        if isinstance(shape, list):
            return [typed(s, dtype) for s in shape]
        return typed(shape, dtype)

    def call(self, *args, **kwargs):
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
           "Power": "pow", "Maximum": "maximum", "Minimum": "minimum"}


class BroadcastingOp(OpNode):
    """An op of two arguments (tensors or numbers) broadcast together as numpy does."""
    params = ("x1", "x2")

    def output_shape(self, bound):
        return broadcast_dims(_shape(bound["x1"]), _shape(bound["x2"]), f"Layer '{self.name}'")


@register_op(*_BINARY)
class BinaryOp(BroadcastingOp):
    input_dtypes = ("float32",)
    shaders = ("binary.comp",)

    def fused_with_activation(self, pointwise):
        return BinaryOpWithActivation(self, pointwise)

    def run(self, bound):
        return elementwise.binary(_BINARY[self.class_name], bound["x1"], bound["x2"])


class BinaryOpWithActivation(BinaryOp):
    """A keras.ops binary operation node (`x1 + x2`, recorded by Keras 3 as an op node) with the
    pointwise activation that followed it, fused by compiler/fusion.py: one dispatch, not two."""
    shaders = ("binary.comp",)

    def __init__(self, op_node: BinaryOp, pointwise):
        super().__init__(op_node.spec, op_node.keras_major)
        self.epilogue = pointwise

    def fused_with_activation(self, pointwise):
        return None                   # one epilogue already

    def run(self, bound):
        return elementwise.binary(_BINARY[self.class_name], bound["x1"], bound["x2"],
                                  self.epilogue)


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
    input_dtypes = ("float32",)
    shaders = ("unary.comp",)

    def function(self, bound):
        name = _UNARY[self.class_name]
        if name == "elu":
            return name, (float(self.opt(bound, "alpha", 1.0)),)
        if name == "leaky_relu":
            return name, (float(self.opt(bound, "negative_slope", 0.2)),)
        if name == "gelu":
            return ("gelu_tanh" if self.opt(bound, "approximate", True) else "gelu"), ()
        return name, ()

    def as_pointwise(self, args, kwargs):
        """A subclass whose run computes anything else overrides this (None)."""
        try:
            name, params = self.function(self.bind(args, kwargs))
        except Exception:       # arguments fusion cannot read at load: not fused
            return None
        return Pointwise(f"act_{name}", tuple(params))

    def run(self, bound):
        name, params = self.function(bound)
        return elementwise.unary(name, bound["x"], *params)


@register_op("Clip")
class ClipOp(OpNode):
    input_dtypes = ("float32",)
    params = ("x", "x_min", "x_max")
    shaders = ("binary.comp",)

    def run(self, bound):
        low = elementwise.maximum(bound["x"], float(self.opt(bound, "x_min")))
        try:
            return elementwise.minimum(low, float(self.opt(bound, "x_max")))
        finally:
            low.dispose()


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
    input_dtypes = ("float32",)
    params = ("x", "axis", "keepdims")
    shaders = ("reduce.comp",)

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        axes = _axes(self.opt(bound, "axis"), len(shape), f"Layer '{self.name}'")
        if self.opt(bound, "keepdims", False):
            return tuple(1 if d in axes else n for d, n in enumerate(shape))
        return tuple(n for d, n in enumerate(shape) if d not in axes)

    def run(self, bound):
        axis = self.opt(bound, "axis")
        axis = tuple(axis) if isinstance(axis, list) else axis
        return reduce.reduce(self.class_name.lower(), bound["x"], axis,
                             bool(self.opt(bound, "keepdims", False)))


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


@register_op("Matmul")
class MatmulOp(OpNode):
    input_dtypes = ("float32",)
    params = ("x1", "x2")
    shaders = ("matmul.comp",)

    def output_shape(self, bound):
        a, b = _shape(bound["x1"]), _shape(bound["x2"])
        if len(a) < 2 or len(b) < 2:
            raise self.unsupported("matmul of a rank-1 operand")
        if None not in (a[-1], b[-2]) and a[-1] != b[-2]:
            raise self.shape_error(f"cannot multiply {list(a)} by {list(b)}.")
        batch = broadcast_dims(a[:-2], b[:-2], f"Layer '{self.name}'")
        return batch + (a[-2], b[-1])

    def run(self, bound):
        return matmul.matmul(bound["x1"], bound["x2"])


@register_op("Concatenate")
class ConcatenateOp(OpNode):
    input_dtypes = ("float32",)
    params = ("xs", "axis")
    shaders = ("concat.comp",)

    def output_shape(self, bound):
        shapes = [_shape(x) for x in bound["xs"]]
        rank = len(shapes[0])
        axis = int(self.opt(bound, "axis", 0))
        if not -rank <= axis < rank or any(len(s) != rank for s in shapes):
            raise self.shape_error(f"cannot concatenate shapes {[list(s) for s in shapes]} "
                                   f"along axis {axis}.")
        axis %= rank
        sizes = [s[axis] for s in shapes]
        out = list(shapes[0])
        out[axis] = None if None in sizes else sum(sizes)
        for d in range(rank):
            if d != axis:
                known = {s[d] for s in shapes if s[d] is not None}
                if len(known) > 1:
                    raise self.shape_error(f"cannot concatenate shapes "
                                           f"{[list(s) for s in shapes]} along axis {axis}.")
                out[d] = known.pop() if known else None
        return tuple(out)

    def run(self, bound):
        return merge.concatenate(list(bound["xs"]), int(self.opt(bound, "axis", 0)))


@register_op("Softmax", "LogSoftmax")
class SoftmaxOp(OpNode):
    input_dtypes = ("float32",)
    params = ("x", "axis")
    shaders = ("softmax.comp",)

    def run(self, bound):
        axis = self.opt(bound, "axis", -1)
        axis = tuple(axis) if isinstance(axis, list) else axis
        function = softmax.log_softmax if self.class_name == "LogSoftmax" else softmax.softmax
        return function(bound["x"], axis)
