"""TensorFlow operations that tf.keras recorded as layers (TFOpLambda: `x + 1`, `tf.nn.relu(x)`).

tf.keras saves such a call as a layer whose config names the TensorFlow function
("math.reduce_mean", "__operators__.add", "compat.v1.transpose") and whose node holds the call:
the first argument positionally, every other one by keyword. The common functions run here from
the table below, with kerasgl's ops and without TensorFlow; any other is refused at load by name.
"""
from __future__ import annotations

from ...ops import elementwise, layout, matmul, merge, reduce, softmax
from ..base import Layer, register
from ..typed_shapes import broadcast_dims
from ...saving.spec import TensorRef

_BINARY = {"__operators__.add": "add", "math.add": "add", "math.subtract": "sub",
           "__operators__.sub": "sub", "math.multiply": "mul", "math.divide": "div",
           "math.truediv": "div", "math.maximum": "maximum", "math.minimum": "minimum",
           "math.pow": "pow"}
_UNARY = {"nn.relu": "relu", "math.exp": "exp", "math.log": "log", "math.sqrt": "sqrt",
          "math.abs": "abs", "math.tanh": "tanh", "nn.tanh": "tanh", "math.sigmoid": "sigmoid",
          "nn.sigmoid": "sigmoid", "math.negative": "neg"}
_REDUCE = {"math.reduce_mean": "mean", "math.reduce_sum": "sum", "math.reduce_max": "max",
           "math.reduce_min": "min"}
_SHAPING = ("reshape", "transpose", "expand_dims", "squeeze", "concat", "clip_by_value",
            "nn.softmax", "math.softmax", "linalg.matmul", "math.matmul")
SUPPORTED = tuple(_BINARY) + tuple(_UNARY) + tuple(_REDUCE) + _SHAPING


def _function(name: str) -> str:
    return name[len("compat.v1."):] if name.startswith("compat.v1.") else name


def _shape_of(value):
    return tuple(value) if isinstance(value, (tuple, list)) else ()


def _axis(axis, rank: int) -> int:
    return axis + rank if axis < 0 else axis


@register("TFOpLambda")
class TFOpLambda(Layer):
    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 2):
        super().__init__(spec, keras_major)
        self.function = _function(str(self.option("function", "")))
        if self.function not in SUPPORTED:
            raise self.unsupported(
                f"the TensorFlow operation tf.{self.function} (kerasgl runs these TFOpLambda "
                f"operations without TensorFlow: {', '.join(sorted(SUPPORTED))}); rebuild the "
                "model with Keras layers")
        if len(spec.inbound_nodes) > 1:
            raise self.unsupported("a TensorFlow operation layer called more than once")
        kwargs = spec.inbound_nodes[0].kwargs if spec.inbound_nodes else {}
        # The call's constant options (axis, shape, perm...): tensors arrive in call.
        self.options = {k: v for k, v in (kwargs or {}).items()
                        if not isinstance(v, TensorRef) and k != "name"}

    def _opt(self, key, default=None):
        return self.options.get(key, default)

    # -- shapes ------------------------------------------------------------------------------
    def compute_output_shape(self, input_shape, **tensor_shapes):
        f = self.function
        if f in _BINARY:
            other = tensor_shapes.get("y", _shape_of(None))
            return broadcast_dims(input_shape, other, f"Layer '{self.name}'")
        if f in _UNARY or f in ("clip_by_value", "nn.softmax", "math.softmax"):
            return tuple(input_shape)
        if f in _REDUCE:
            return _reduced(input_shape, self._opt("axis"), bool(self._opt("keepdims", False)))
        if f == "reshape":
            return _reshaped(input_shape, list(self._opt("shape")))
        if f == "transpose":
            perm = self._opt("perm") or list(reversed(range(len(input_shape))))
            return tuple(input_shape[p] for p in perm)
        if f == "expand_dims":
            axis = _axis(self._opt("axis"), len(input_shape) + 1)
            return tuple(input_shape[:axis]) + (1,) + tuple(input_shape[axis:])
        if f == "squeeze":
            axes = self._opt("axis")
            axes = [axes] if isinstance(axes, int) else axes
            if axes is None:
                return tuple(d for d in input_shape if d != 1)
            axes = {_axis(a, len(input_shape)) for a in axes}
            return tuple(d for i, d in enumerate(input_shape) if i not in axes)
        if f == "concat":
            axis = _axis(self._opt("axis", -1), len(input_shape[0]))
            total = sum(s[axis] for s in input_shape) if all(s[axis] is not None
                                                             for s in input_shape) else None
            return tuple(input_shape[0][:axis]) + (total,) + tuple(input_shape[0][axis + 1:])
        # matmul
        b = tensor_shapes["b"]
        m = input_shape[-1] if self._opt("transpose_a") else input_shape[-2]
        n = b[-2] if self._opt("transpose_b") else b[-1]
        return broadcast_dims(input_shape[:-2], b[:-2], f"Layer '{self.name}'") + (m, n)

    # -- running -------------------------------------------------------------------------------
    def call(self, x, **kwargs):
        f = self.function
        if f in _BINARY:
            return elementwise.binary(_BINARY[f], x, kwargs.get("y", self._opt("y")))
        if f in _UNARY:
            return elementwise.unary(_UNARY[f], x)
        if f in _REDUCE:
            return reduce.reduce(_REDUCE[f], x, self._opt("axis"), bool(self._opt("keepdims", False)))
        if f in ("nn.softmax", "math.softmax"):
            return softmax.softmax(x, self._opt("axis", -1))
        if f == "clip_by_value":
            low, high = self._opt("clip_value_min"), self._opt("clip_value_max")
            clipped = elementwise.minimum(x, high)
            try:
                return elementwise.maximum(clipped, low)
            finally:
                clipped.dispose()
        if f == "concat":
            return merge.concatenate(list(x), self._opt("axis", -1))
        if f == "transpose":
            return layout.transpose(x, self._opt("perm"))
        if f in ("reshape", "expand_dims", "squeeze"):
            shape = self.compute_output_shape(x.shape) if f != "reshape" else \
                [x.shape[0] if d in (-1, None) and i == 0 else d
                 for i, d in enumerate(self._opt("shape"))]
            return layout.reshape(x, tuple(-1 if d is None else d for d in shape))
        return matmul.matmul(x, kwargs["b"], transpose_a=bool(self._opt("transpose_a")),
                             transpose_b=bool(self._opt("transpose_b")))


def _reduced(shape, axis, keepdims: bool):
    rank = len(shape)
    axes = range(rank) if axis is None else [axis] if isinstance(axis, int) else axis
    axes = {_axis(a, rank) for a in axes}
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reshaped(shape, target: list):
    """tf.reshape's output shape; the batch dimension stays unknown (None)."""
    if not target or target[0] not in (-1, None):
        return tuple(target)
    rest = [d for d in target[1:]]
    if -1 in rest and all(d is not None for d in shape[1:]):
        size = 1
        for d in shape[1:]:
            size *= d
        for d in rest:
            size //= d if d != -1 else 1
        rest[rest.index(-1)] = size
    return (None,) + tuple(None if d == -1 else d for d in rest)
