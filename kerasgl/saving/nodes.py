"""Layer calls (inbound nodes) and tensor references, in both Keras dialects -> NodeSpec/TensorRef.

Keras 2 records a call as a nested list of `[layer, node_index, tensor_index, kwargs]` entries
(kwargs repeated on every entry; `["_CONSTANT_VALUE", -1, value, kwargs]` for a constant in the
first argument); Keras 3 as `{"args": [...], "kwargs": {...}}` whose tensors are
`{"class_name": "__keras_tensor__", "config": {"keras_history": [layer, node, index]}}`.

Node indices: the file's `node_index` counts calls as Keras counts them on the live layer object,
which for some nested models includes a built-in call that is not part of the outer graph (see
`NodeIndexing`). TensorRef.node_index is always the 0-based position in the referenced layer's
LayerSpec.inbound_nodes (0 for an InputLayer), so model.py never needs to know about that quirk.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .spec import NodeSpec, TensorRef

KERAS2_CONSTANT = "_CONSTANT_VALUE"

# Keras 2 layers that keep the nested structure of their first argument (a one-element list stays
# a list); for every other layer Keras 2 unwraps a single tensor (tf_keras' unnest_if_single_tensor).
_KEEPS_INPUT_STRUCTURE = {"TFOpLambda", "SlicingOpLambda"}

NodeOffset = Callable[[str], int]


def _is_keras2_entry(value) -> bool:
    """`[layer_name, node_index, tensor_index]` or the same plus a kwargs dict."""
    return (isinstance(value, list) and len(value) in (3, 4) and isinstance(value[0], str)
            and isinstance(value[1], int) and (len(value) == 3 or isinstance(value[3], dict)))


def tensor_ref(name, node_index, tensor_index, offset: NodeOffset) -> TensorRef:
    """A TensorRef from a file's (layer, node, tensor) triple, whose parts must be a name and two
    integers (a damaged file may hold anything there: a dict, a float, a negative index)."""
    if not isinstance(name, str) or not _is_index(node_index) or not _is_index(tensor_index):
        raise ValueError(f"malformed tensor reference {[name, node_index, tensor_index]!r} "
                         "(a layer name and two indices >= 0 expected)")
    return TensorRef(name, node_index - offset(name), tensor_index)


def _is_index(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def keras2_ref(entry: list, offset: NodeOffset) -> TensorRef:
    return tensor_ref(entry[0], entry[1], entry[2], offset)


def _keras2_kwargs_value(value, offset: NodeOffset):
    """Keras 2 kwargs hold tensors as `[layer, node, tensor]` lists (tf_keras wraps exactly the
    lists of length 3/4 that start with a string, see convert_inner_node_data)."""
    if isinstance(value, list) and len(value) in (3, 4) and isinstance(value[0], str) \
            and isinstance(value[1], int) and isinstance(value[2], int):
        return keras2_ref(value, offset)
    if isinstance(value, list):
        return [_keras2_kwargs_value(v, offset) for v in value]
    if isinstance(value, dict):
        return {k: _keras2_kwargs_value(v, offset) for k, v in value.items()}
    return value


def keras2_node(node_data, class_name: str, offset: NodeOffset) -> NodeSpec:
    """One Keras 2 call: the first argument's structure with TensorRef leaves, plus kwargs."""
    kwargs: dict = {}
    found_kwargs = False

    def convert(value):
        nonlocal kwargs, found_kwargs
        if _is_keras2_entry(value):
            if len(value) == 4 and not found_kwargs:
                kwargs, found_kwargs = value[3], True
            if value[0] == KERAS2_CONSTANT:
                return value[2]
            return keras2_ref(value, offset)
        if isinstance(value, list):
            return [convert(v) for v in value]
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        raise ValueError(f"unexpected inbound node entry {value!r}")

    first_arg = convert(node_data)
    if class_name not in _KEEPS_INPUT_STRUCTURE and not isinstance(first_arg, dict):
        leaves = _flat_leaves(first_arg)
        if len(leaves) == 1:    # tf_keras' unnest_if_single_tensor
            first_arg = leaves[0]
    return NodeSpec(args=[first_arg], kwargs=_keras2_kwargs_value(kwargs, offset))


def _flat_leaves(value) -> list:
    if isinstance(value, list):
        return [leaf for item in value for leaf in _flat_leaves(item)]
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _flat_leaves(value[key])]
    return [value]


def keras3_value(value, offset: NodeOffset) -> Any:
    """Decode a Keras 3 serialized call argument: tensors -> TensorRef, arrays -> numpy, slices,
    Ellipsis; anything else stays plain data (never deserialised into live objects)."""
    if isinstance(value, (list, tuple)):       # tuples: configs passed in as live dicts
        return [keras3_value(v, offset) for v in value]
    if not isinstance(value, dict):
        return value
    class_name = value.get("class_name")
    config = value.get("config")
    if class_name == "__keras_tensor__" and isinstance(config, dict):
        history = config.get("keras_history")
        if not isinstance(history, (list, tuple)) or len(history) != 3:
            raise ValueError(f"malformed keras_history {history!r}")
        return tensor_ref(*history, offset)
    if class_name in ("__numpy__", "__tensor__") and isinstance(config, dict):
        return np.asarray(config["value"], dtype=_constant_dtype(config.get("dtype")))
    if class_name == "__slice__" and isinstance(config, dict):
        return slice(*(keras3_value(config.get(k), offset) for k in ("start", "stop", "step")))
    if class_name == "__ellipsis__":
        return Ellipsis
    if class_name == "__tuple__" and isinstance(config, dict):
        return [keras3_value(v, offset) for v in config.get("value", [])]
    return {k: keras3_value(v, offset) for k, v in value.items()}


def _constant_dtype(name):
    """The dtype of a constant call argument: numbers or booleans only (a file naming "S9999999"
    or "object" would make numpy allocate or hold anything)."""
    if name is None:
        return None
    dtype = np.dtype(name)
    if dtype.kind not in "biuf":
        raise ValueError(f"constant argument of dtype {name!r}: numbers only")
    return dtype


def keras3_node(node_data: dict, offset: NodeOffset) -> NodeSpec:
    args = keras3_value(node_data.get("args", []), offset)
    kwargs = keras3_value(node_data.get("kwargs", {}), offset)
    if not isinstance(args, list):
        args = [args]
    return NodeSpec(args=args, kwargs=kwargs if isinstance(kwargs, dict) else {})


def is_keras3_node(node_data) -> bool:
    """Keras 3 calls are `{"args": ..., "kwargs": ...}`; a Keras 2 call is a list, or a dict of
    entries when the layer was called with a dict."""
    return isinstance(node_data, dict) and "args" in node_data and set(node_data) <= {"args", "kwargs"}


def parse_node(node_data, class_name: str, offset: NodeOffset) -> NodeSpec:
    if is_keras3_node(node_data):
        return keras3_node(node_data, offset)
    if isinstance(node_data, (list, dict)):
        return keras2_node(node_data, class_name, offset)
    raise ValueError(f"unexpected inbound node {node_data!r}")


def flatten_endpoints(value, offset: NodeOffset) -> tuple[list[TensorRef], list[str] | None]:
    """`input_layers` / `output_layers`: one triple, a list of triples, or (Keras 3) a dict of
    them. Returns the refs in Keras' flattening order and, for a dict, its keys in that order
    (keras.tree flattens dicts by sorted key)."""
    if isinstance(value, dict):
        keys = sorted(value)
        refs = [ref for k in keys for ref in flatten_endpoints(value[k], offset)[0]]
        return refs, keys
    if isinstance(value, list) and len(value) in (3, 4) and isinstance(value[0], str):
        return [tensor_ref(value[0], value[1], value[2], offset)], None
    if isinstance(value, list):
        refs: list[TensorRef] = []
        for item in value:
            refs.extend(flatten_endpoints(item, offset)[0])
        return refs, None
    raise ValueError(f"unexpected model input/output reference {value!r}")
