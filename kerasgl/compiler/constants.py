"""Constant operands of Keras 3 operations: `x + np.arange(n)`, a position table computed eagerly.

Keras 3 saves such a call as an op node whose argument is the array itself. The graph gives each
array a node of its own, a Constant layer with no inputs that owns the array as a weight: uploaded
once when the model is built, freed when it is disposed, and read by the op like any tensor. A
constant is not a Keras weight: it counts no parameters and is not in `model.layers`.
"""
from __future__ import annotations

import numpy as np

from .arguments import refs_in
from ..layers.base import Layer
from ..layers.typed_shapes import typed
from ..keras_ops.node import BroadcastingOp, OpNode
from ..saving.spec import LayerSpec, TensorRef
from ..tensors.tensor import view


class Constant(Layer):
    """A constant call argument: its call returns the uploaded array (a view of it, so the graph
    can free what it is handed without freeing the weight)."""
    mask_behaviour = "drops"
    weight_arrays = 1

    def __init__(self, name: str, array: np.ndarray, keras_major: int = 3,
                 dtype: str = "float32"):
        super().__init__(LayerSpec("Constant", name, {"name": name}, weights=[array]), keras_major)
        self.value = None
        self.dtype = dtype        # float32, or int32 / bool beside a broadcasting op (as Keras)

    def compute_output_shape(self, input_shape=None):
        return typed(self.weights_np[0].shape, self.dtype)

    def build(self, input_shape=None) -> None:
        if self.value is None:
            self.value = self.upload(self.weights_np[0], dtype=self.dtype, name="value")
        self.built = True

    def call(self):
        return view(self.value, self.value.shape)

    @property
    def param_count(self) -> int:
        return 0           # Keras counts no parameters for a constant


def _liftable(layer, array: np.ndarray) -> bool:
    """Float arrays are operands of any op; integer and boolean ones only of ops that broadcast
    them against a float tensor (elsewhere they may be indices the op reads on the host)."""
    return array.dtype.kind == "f" or isinstance(layer, BroadcastingOp) \
        or layer.class_name == "Matmul"


def _dtype(layer, array: np.ndarray) -> str:
    """The dtype of a lifted constant: a broadcasting op (x + ids, x == mask) takes integer and
    boolean arrays as Keras does (int32 under JAX, bool); elsewhere constants are float32."""
    if isinstance(layer, BroadcastingOp) and array.dtype.kind == "b":
        return "bool"
    if isinstance(layer, BroadcastingOp) and array.dtype.kind in "iu" and (
            not array.size or (array.min() >= -2 ** 31 and array.max() < 2 ** 31)):
        return "int32"
    return "float32"


def lift(nodes: list, made: dict, node_type, keras_major: int) -> list:
    """`nodes` with each array argument of an op node replaced by a reference to a new Constant
    node (added to `made` and to the list, before its user). 0-d arrays become Python numbers."""
    result = []
    for node in nodes:
        if isinstance(node.layer, OpNode):
            found = []

            def replace(value, layer=node.layer):
                if isinstance(value, np.ndarray):
                    if value.ndim == 0 and value.dtype.kind in "biuf":
                        return value.item()
                    if _liftable(layer, value):
                        name = _fresh_name(f"{layer.name}_constant", made)
                        made[name] = Constant(name, value, keras_major, _dtype(layer, value))
                        found.append(node_type(made[name], 0, [], {}))
                        return TensorRef(name)
                    return value
                if isinstance(value, list):
                    return [replace(v) for v in value]
                if isinstance(value, tuple):
                    return tuple(replace(v) for v in value)
                if isinstance(value, dict):
                    return {k: replace(v) for k, v in value.items()}
                return value

            node.args = replace(node.args)
            node.kwargs = replace(node.kwargs)
            if found:
                node.refs = refs_in(node.args) + refs_in(node.kwargs)
                result.extend(found)
        result.append(node)
    return result


def _fresh_name(base: str, made: dict) -> str:
    name, i = base, 0
    while name in made:
        i += 1
        name = f"{base}_{i}"
    return name
