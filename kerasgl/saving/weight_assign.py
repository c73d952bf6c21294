"""Put weight arrays read from a file onto the LayerSpecs of a ModelSpec, and check them.

Legacy HDF5 files (Keras 2, Keras 3 `.h5`, `save_weights` `.h5`) store one flat list of
`(weight_name, array)` per top-level layer. For a nested model that list covers all of its inner
layers, in the nested model's `trainable_weights + non_trainable_weights` order (so a nested
BatchNormalization's moving statistics come after every trainable weight of the nested model).
The inner layer a weight belongs to is found from its name (`inner_seq/dense_2/kernel:0`), at any
depth of nesting, and from the list's order where names alone are ambiguous (_distribute_nested).

What the arrays of a class should be (how many a config implies, which only training reads) is the
layer class's to say: this module asks saving/layer_rules.py, where the layer classes declare it.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFileError
from .config import OP_MODULE_PREFIX
from .layer_rules import expected_weight_count, rules_for
from .spec import LayerSpec, ModelSpec

NamedArrays = list[tuple[str, np.ndarray]]


def is_op_node(layer: LayerSpec) -> bool:
    return bool(layer.module) and layer.module.startswith(OP_MODULE_PREFIX)


def stores_weights(layer: LayerSpec) -> bool:
    """Layers that Keras gives a weights group: everything but InputLayers and op nodes."""
    return layer.class_name != "InputLayer" and not is_op_node(layer)


def assign_legacy_weights(spec: ModelSpec, per_layer: dict[str, NamedArrays], source: str) -> None:
    owners = [layer for layer in spec.layers if stores_weights(layer)]
    known = {layer.name for layer in spec.layers}
    for name, arrays in per_layer.items():
        if name not in known and arrays:
            raise ModelFileError(f"{source}: the file holds weights for a layer {name!r} that "
                                 f"model {spec.name!r} does not have")
    for layer in owners:
        if layer.name not in per_layer:
            raise ModelFileError(f"{source}: no weights group for layer {layer.name!r} "
                                 f"({layer.class_name}) of model {spec.name!r}")
        arrays = per_layer[layer.name]
        if layer.inner is not None:
            _distribute_nested(layer.inner, arrays, source, layer.name)
        else:
            layer.weights = [array for _, array in arrays]
    finish_weights(spec, source)


def _distribute_nested(inner: ModelSpec, arrays: NamedArrays, source: str, path: str) -> None:
    """Give each array of a nested model's flat list to the layer it belongs to, at any depth.

    A weight's name holds its layer's name (`dense_2/kernel:0`), and the names of the models
    around it only sometimes: Keras 2 files of a Sequential holding a Functional model (Teachable
    Machine's) name MobileNetV2's weights `Conv1/kernel:0`, without the inner model. The owner is
    the layer at any depth whose name, with as many of its enclosing models' names as possible,
    appears in the weight's name. Where several layers match equally (two inner models, each with
    a `dense`), the list's order decides as in Keras 2's legacy loader, which assigns the arrays
    by order: the first of them in layer order that has no variable of that name yet."""
    leaves = list(_leaf_layers(inner, ()))
    buckets: dict[int, NamedArrays] = {id(layer): [] for _, layer in leaves}
    for weight_name, array in arrays:
        owner = _owner(leaves, buckets, weight_name)
        if owner is None:
            raise ModelFileError(f"{source}: cannot tell which layer of nested model {path!r} "
                                 f"the weight {weight_name!r} belongs to (no layer at any depth "
                                 "of it has a name in the weight's name, or every layer that "
                                 "does already has a variable of that name)")
        buckets[id(owner)].append((weight_name, array))
    for _, layer in leaves:
        layer.weights = [array for _, array in buckets[id(layer)]]


def _leaf_layers(inner: ModelSpec, enclosing: tuple):
    """(names of the nested models around it, within `inner`; layer) for every layer that owns
    weights, in layer order, depth first (Keras 2's order of a model's weights)."""
    for layer in inner.layers:
        if not stores_weights(layer):
            continue
        if layer.inner is not None:
            yield from _leaf_layers(layer.inner, enclosing + (layer.name,))
        else:
            yield enclosing, layer


def _owner(leaves, buckets: dict, weight_name: str):
    parts = weight_name.split("/")
    scopes, variable = set(parts[:-1]), parts[-1]   # the last component: the variable's name
    scored = [(sum(name in scopes for name in enclosing), layer)
              for enclosing, layer in leaves if layer.name in scopes]
    if not scored:
        return None
    best = max(score for score, _ in scored)
    candidates = [layer for score, layer in scored if score == best]
    if len(candidates) == 1:
        return candidates[0]
    for layer in candidates:
        if all(name.split("/")[-1] != variable for name, _ in buckets[id(layer)]):
            return layer
    return None


def finish_weights(spec: ModelSpec, source: str) -> None:
    """Last step of every weight reader: drop training-only arrays, then check the counts."""
    drop_training_only_weights(spec)
    check_weight_counts(spec, source)


def drop_training_only_weights(spec: ModelSpec) -> None:
    """Keep the arrays inference reads (the layer class's inference_weights; e.g. Keras 2's
    BatchNormalization(renorm=True) adds three that only steer training)."""
    for layer in spec.layers:
        if layer.inner is not None:
            drop_training_only_weights(layer.inner)
        elif stores_weights(layer):
            kept = list(rules_for(layer.class_name).inference_weights(layer.config, layer.weights))
            if len(kept) != len(layer.weights):
                layer.file_weights = list(layer.weights)    # get_weights() gives them all
            layer.weights = kept


def check_weight_counts(spec: ModelSpec, source: str, path: str = "") -> None:
    """Reject layers whose number of arrays cannot match their config (the counts the layer
    classes declare, layer_rules.expected_weight_count)."""
    for layer in spec.layers:
        where = f"{path}{layer.name}"
        if layer.inner is not None:
            check_weight_counts(layer.inner, source, f"{where}/")
            continue
        if not stores_weights(layer):
            continue
        expected = expected_weight_count(layer.class_name, layer.config)
        if expected is not None and expected != len(layer.weights):
            # A model saved before it ever saw an input shape has no weights at all.
            hint = (" (was the model saved before it was built?)"
                    if not layer.weights and not spec.input_shapes else "")
            raise ModelFileError(f"{source}: layer {where!r} ({layer.class_name}) has "
                                 f"{len(layer.weights)} weight array(s) in the file, but its "
                                 f"config needs {expected}{hint}")
