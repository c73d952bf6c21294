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

from dataclasses import dataclass

from ..errors import ShapeError
from ..layers.base import Layer, register_in
from ..layers.typed_shapes import broadcast_dims, dtype_of, operand_dtype, typed

# Operation class -> the OpNode class that runs its int32 / bool form, where the class registered
# for it takes float32 only (Sign: numpy/elementwise_math.py's; numpy/logic.py fills this in).
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


def normalized_axes(axis, rank: int, where: str) -> tuple:
    """Keras's axis argument (None: every axis; an int; a list) as sorted, distinct, non-negative
    axes of a tensor of this rank; a ShapeError naming `where` for one out of range."""
    if axis is None:
        return tuple(range(rank))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if not -rank <= a < rank:
            raise ShapeError(f"{where}: axis {a} is out of range for rank {rank}.")
    return tuple(sorted({a % rank for a in axes}))


# Keras dtype names kerasgl's tensors can be (the others have no kerasgl form).
_DTYPES = {"float32": "float32", "int32": "int32", "bool": "bool"}


def requested_dtype(node, dtype, allow_none=False):
    """A dtype an operation's options ask for (saturate_cast's, array's), as kerasgl's dtype;
    node.unsupported() for one kerasgl's tensors cannot be."""
    if dtype is None and allow_none:
        return None
    name = str(getattr(dtype, "name", dtype))
    if name not in _DTYPES:
        raise node.unsupported(f"dtype={name!r} (kerasgl's tensors are float32, int32 or bool)")
    return _DTYPES[name]


class OpNode(Layer):
    """Base of op nodes. `params` names the operation's call parameters, in order."""
    params: tuple = ("x",)
    mask_behaviour = "drops"      # keras.ops carry no Keras masks
    weight_arrays = 0
    # The dtypes its tensor arguments may have (layers/typed_shapes.py): others are refused at load. None:
    # not checked (the mask ops of layers/core/masking.py take int32 token ids and 0/1 floats alike).
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

    def axes_of(self, axis, rank: int) -> tuple:
        """normalized_axes for this node: its errors name the layer."""
        return normalized_axes(axis, rank, f"Layer '{self.name}'")

    def opt(self, bound: dict, key: str, default=None):
        """An option from the call's arguments, else from the node's config."""
        return bound[key] if key in bound else self.options.get(key, default)

    def node_output_shape(self, args, kwargs):
        """Shape inference over the node's arguments (Symbolic leaves for tensors), the result
        carrying its dtype (typed_shapes.TypedShape) when that is not float32."""
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


class BroadcastingOp(OpNode):
    """An op of two arguments (tensors or numbers) broadcast together as numpy does."""
    params = ("x1", "x2")

    def output_shape(self, bound):
        return broadcast_dims(_shape(bound["x1"]), _shape(bound["x2"]), f"Layer '{self.name}'")


def checked_operand(layer: OpNode, value, name: str) -> str:
    """The dtype of a tensor or number argument (typed_shapes.operand_dtype); anything else, or an
    integer int32 words cannot hold, is unsupported."""
    dtype = operand_dtype(value)
    if dtype is None:
        raise layer.unsupported(f"{name}={value!r} (a tensor or a number is needed)")
    if dtype == "int32" and isinstance(value, int) and not -2 ** 31 <= value < 2 ** 31:
        raise layer.unsupported(f"{name}={value} (outside int32)")
    return dtype
