"""Put weight arrays read from a file onto the LayerSpecs of a ModelSpec, and check them.

Legacy HDF5 files (Keras 2, Keras 3 `.h5`, `save_weights` `.h5`) store one flat list of
`(weight_name, array)` per top-level layer. For a nested model that list covers all of its inner
layers, in the nested model's `trainable_weights + non_trainable_weights` order (so a nested
BatchNormalization's moving statistics come after every trainable weight of the nested model).
The inner layer a weight belongs to is found from its name (`inner_seq/dense_2/kernel:0`): the
first path component that names one of the nested model's layers.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFileError
from .config import OP_MODULE_PREFIX
from .spec import LayerSpec, ModelSpec
from .weight_counts import expected_weight_count

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
    owners = {layer.name: layer for layer in inner.layers if stores_weights(layer)}
    buckets: dict[str, NamedArrays] = {name: [] for name in owners}
    for weight_name, array in arrays:
        scopes = weight_name.split("/")[:-1]     # the last component is the variable's own name
        owner = next((scope for scope in scopes if scope in owners), None)
        if owner is None:
            raise ModelFileError(f"{source}: cannot tell which layer of nested model {path!r} "
                                 f"the weight {weight_name!r} belongs to")
        buckets[owner].append((weight_name, array))
    for name, layer in owners.items():
        if layer.inner is not None:
            _distribute_nested(layer.inner, buckets[name], source, f"{path}/{name}")
        else:
            layer.weights = [array for _, array in buckets[name]]


def finish_weights(spec: ModelSpec, source: str) -> None:
    """Last step of every weight reader: drop training-only arrays, then check the counts."""
    drop_training_only_weights(spec)
    check_weight_counts(spec, source)


# Keras 2 BatchNormalization(renorm=True) appends moving_stddev, renorm_mean and renorm_stddev
# to its weights. They only steer training (batch renormalisation); at inference tf-keras
# normalises with moving_mean / moving_variance exactly like plain BatchNormalization
# (checked by the batchnorm_variants fixture).
_RENORM_EXTRA_WEIGHTS = 3


def drop_training_only_weights(spec: ModelSpec) -> None:
    for layer in spec.layers:
        if layer.inner is not None:
            drop_training_only_weights(layer.inner)
        elif layer.class_name == "BatchNormalization" and layer.config.get("renorm"):
            base = expected_weight_count(layer.class_name, layer.config)
            if base is not None and len(layer.weights) == base + _RENORM_EXTRA_WEIGHTS:
                layer.weights = layer.weights[:base]


def check_weight_counts(spec: ModelSpec, source: str, path: str = "") -> None:
    """Reject layers whose number of arrays cannot match their config (see weight_counts)."""
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
