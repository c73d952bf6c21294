"""What a Keras user reads off a layer or a model without running it, with Keras's semantics:
`get_weights()` as the file stores the arrays, `get_config()` as kerasgl read the config.

Everything here comes from the ModelSpec (saving/spec.py), never from what kerasgl made of it at
load: a layer's GPU weights are packed, transposed or folded (a BatchNormalization into the
convolution before it), while the spec keeps the file's arrays in `layer.get_weights()` order.
"""
from __future__ import annotations

import copy

import numpy as np

from ..saving.spec import LayerSpec, ModelSpec, TensorRef


def stored_weights(spec: LayerSpec) -> list:
    """The arrays keras.layers.Layer.get_weights() returns for this layer: every array the file
    holds for it (`file_weights` where the reader left training-only ones out of `weights`), in
    Keras's order. A model nested as a layer gives its layers' arrays, layer after layer, as
    keras.Model.get_weights() does."""
    if spec.inner is not None:
        return [w for layer in spec.inner.layers for w in stored_weights(layer)]
    kept = getattr(spec, "file_weights", None)
    return list(spec.weights if kept is None else kept)


def copied(arrays) -> list[np.ndarray]:
    """Copies: a caller changing them changes nothing kerasgl keeps."""
    return [np.array(a, copy=True) for a in arrays]


def parameter_count(spec: LayerSpec) -> int:
    return sum(int(np.prod(np.shape(w))) for w in stored_weights(spec))


def layer_config(spec: LayerSpec) -> dict:
    """keras.layers.Layer.get_config(), normalised as saving/config.py documents (both Keras
    dialects in Keras 3's spelling; a dtype policy as its name). A nested model: its model
    config."""
    if spec.inner is not None:
        return model_config(spec.inner)
    return _without_bookkeeping(copy.deepcopy(spec.config))


# Written by Keras's serialisation into the file (a sub-layer's initializers shared between
# objects), never part of what get_config() returns.
_SAVING_KEYS = ("shared_object_id",)


def _without_bookkeeping(value):
    if isinstance(value, dict):
        return {k: _without_bookkeeping(v) for k, v in value.items() if k not in _SAVING_KEYS}
    if isinstance(value, list):
        return [_without_bookkeeping(v) for v in value]
    return value


def model_config(spec: ModelSpec) -> dict:
    """keras.Model.get_config()'s outline: the name, one entry per layer in the file's order
    (class_name, name, its normalised config, and module where the file records it; op nodes
    included, as Keras 3 lists them) and, for a functional model, `input_layers` /
    `output_layers` as a list of [layer name, node index, tensor index] (a dict for dict inputs /
    outputs; Keras writes a lone triple for a model built on one tensor, which the file's reading
    does not keep apart). A functional model's layers carry their calls (`inbound_nodes`) in Keras
    3's form, each tensor as `__keras_tensor__` with its `keras_history`; the tensors' shapes and
    dtypes, which Keras also writes there, are left out (kerasgl's reading does not keep them)."""
    functional = spec.kind != "Sequential"
    config = {"name": spec.name,
              "layers": [_layer_entry(layer, functional) for layer in spec.layers]}
    if spec.kind != "Sequential":
        config["input_layers"] = _refs_config(spec.inputs, spec.input_keys)
        config["output_layers"] = _refs_config(spec.outputs, spec.output_keys)
    return config


def _layer_entry(spec: LayerSpec, functional: bool) -> dict:
    entry = {"class_name": spec.class_name, "name": spec.name, "config": layer_config(spec)}
    if spec.module:
        entry["module"] = spec.module
    if functional:
        entry["inbound_nodes"] = [{"args": _call_values(node.args),
                                   "kwargs": _call_values(node.kwargs)}
                                  for node in spec.inbound_nodes]
    return entry


def _call_values(value):
    """A call's arguments as Keras 3 writes them: tensors as `__keras_tensor__` entries."""
    if isinstance(value, TensorRef):
        return {"class_name": "__keras_tensor__",
                "config": {"keras_history": [value.layer, value.node_index, value.tensor_index]}}
    if isinstance(value, dict):
        return {key: _call_values(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_call_values(item) for item in value]
    return copy.deepcopy(value)


def _refs_config(refs: list[TensorRef], keys: list | None):
    listed = [[ref.layer, ref.node_index, ref.tensor_index] for ref in refs]
    return dict(zip(keys, listed)) if keys else listed
