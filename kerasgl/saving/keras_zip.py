"""Keras 3 `.keras` archives (also the `.keras` files of tf.keras >= 2.13): a zip holding
`config.json`, `metadata.json` and `model.weights.h5`. Keras 3 `.weights.h5` files use the same
weights layout, so `read_keras3_layout_weights` serves `load_weights_into` too.

Weights layout (keras/src/saving/saving_lib.py): a model's layers are stored under
`layers/<snake_case(class name)>[_N]` in `model.layers` order (`dense`, `dense_1`, ...; a
Sequential's InputLayer and Functional op nodes are not in `model.layers`), each with `vars/0..n`
for the layer's own variables and one subgroup per sub-layer attribute (`forward_layer`,
`backward_layer`, `cell`, `layer`, ...), lists of sub-layers as containers of groups. A nested
model has `layers/...` of its own. tf.keras 2.13-2.15 wrote `_layer_checkpoint_dependencies`
instead of `layers`.
"""
from __future__ import annotations

import io
import json
import re
import zipfile
import zlib

import h5py

from ..errors import ModelFileError
from .config import model_spec_from_config, resolve_keras_major
from .h5_utils import hdf5_errors, open_hdf5, read_array, text_attr
from .spec import LayerSpec, ModelSpec
from .weight_assign import finish_weights, stores_weights

CONFIG_FILE = "config.json"
METADATA_FILE = "metadata.json"
WEIGHTS_FILE = "model.weights.h5"
LAYERS_GROUPS = ("layers", "_layer_checkpoint_dependencies")

# get_weights() follows the order sub-layers were created in, which the file does not record
# (it stores attributes alphabetically); for the layers with several weighted sub-layers the
# creation order is listed here. Other layers have at most one weighted child group.
_CHILD_ORDER = {
    "Bidirectional": ["forward_layer", "backward_layer"],
    "MultiHeadAttention": ["query_dense", "_query_dense", "key_dense", "_key_dense",
                           "_gate_dense", "value_dense", "_value_dense", "output_dense",
                           "_output_dense"],
    "GroupedQueryAttention": ["_query_dense", "_key_dense", "_gate_dense", "_value_dense",
                              "_output_dense"],
}
# which config key describes the sub-layer stored under an attribute
_CHILD_CONFIG_KEY = {"forward_layer": "layer", "layer": "layer", "cell": "cell"}


def snake_case(name: str) -> str:
    """keras.src.utils.naming.to_snake_case."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _unique_name(name: str, used: dict[str, int]) -> str:
    """keras saving_lib._get_unique_name: dense, dense_1, dense_2, ..."""
    if name in used:
        used[name] += 1
        return f"{name}_{used[name]}"
    used[name] = 0
    return name


def _natural_key(name: str):
    base, _, number = name.rpartition("_")
    if base and number.isdigit():
        return (base, int(number))
    return (name, -1)


def _sublayer_config(config: dict | None, attr: str) -> tuple[str | None, dict | None]:
    if not isinstance(config, dict):
        return None, None
    key = _CHILD_CONFIG_KEY.get(attr)
    if attr == "backward_layer":
        key = "backward_layer" if isinstance(config.get("backward_layer"), dict) else "layer"
    sub = config.get(key) if key else None
    if isinstance(sub, dict) and isinstance(sub.get("config"), dict):
        return sub.get("class_name"), sub["config"]
    return None, None


def _ordered_children(class_name: str | None, names: list[str]) -> list[str]:
    preferred = [n for n in _CHILD_ORDER.get(class_name or "", []) if n in names]
    rest = [n for n in names if n not in preferred]
    # Keras saves public attributes before private ones ("_"), each alphabetically.
    rest.sort(key=lambda n: (n.startswith("_"), n))
    return preferred + rest


def _container_order(config: dict | None, attr: str, names: list[str]) -> list[str]:
    """A list attribute (e.g. StackedRNNCells.cells): its groups are named after the classes of
    the list's items, in list order, which the config's list gives back."""
    items = config.get(attr) if isinstance(config, dict) else None
    if isinstance(items, list):
        used: dict[str, int] = {}
        expected = [_unique_name(snake_case(item.get("class_name", "")), used)
                    for item in items if isinstance(item, dict)]
        if sorted(expected) == sorted(names):
            return expected
    return sorted(names, key=_natural_key)


def _item_config(config: dict | None, attr: str, index: int) -> tuple[str | None, dict | None]:
    items = config.get(attr) if isinstance(config, dict) else None
    if isinstance(items, list) and index < len(items) and isinstance(items[index], dict):
        return items[index].get("class_name"), items[index].get("config")
    return None, None


def _own_vars(group: h5py.Group, where: str, source: str) -> list:
    if "vars" not in group:
        return []
    vars_group = group["vars"]
    keys = list(vars_group.keys())
    if sorted(keys, key=int) != [str(i) for i in range(len(keys))]:
        raise ModelFileError(f"{source}: unexpected variable names {keys} in {where}/vars")
    return [read_array(vars_group[str(i)]) for i in range(len(keys))]


def _saveable_weights(group: h5py.Group, class_name: str | None, config: dict | None,
                      where: str, source: str) -> list:
    """A layer's arrays in get_weights() order: its own variables, then its sub-layers'."""
    weights = _own_vars(group, where, source)
    children = [name for name in group.keys() if name != "vars"]
    for attr in _ordered_children(class_name, children):
        child = group[attr]
        if "vars" in child:
            sub_class, sub_config = _sublayer_config(config, attr)
            weights += _saveable_weights(child, sub_class, sub_config, f"{where}/{attr}", source)
        else:
            for index, item in enumerate(_container_order(config, attr, list(child.keys()))):
                sub_class, sub_config = _item_config(config, attr, index)
                weights += _saveable_weights(child[item], sub_class, sub_config,
                                             f"{where}/{attr}/{item}", source)
    return weights


def _saved_layers(spec: ModelSpec) -> list[LayerSpec]:
    """The layers Keras writes, in `model.layers` order."""
    layers = [layer for layer in spec.layers if stores_weights(layer)
              or (layer.class_name == "InputLayer" and spec.kind == "Functional")]
    return layers


def _assign_model(spec: ModelSpec, group: h5py.Group, where: str, source: str) -> None:
    used: dict[str, int] = {}
    for layer in _saved_layers(spec):
        group_name = _unique_name(snake_case(layer.class_name), used)
        path = f"{where}/{group_name}"
        if group_name not in group:
            raise ModelFileError(f"{source}: no weights group {path!r} for layer {layer.name!r} "
                                 f"({layer.class_name})")
        layer_group = group[group_name]
        stored_name = text_attr(layer_group["vars"], "name") if "vars" in layer_group else None
        if stored_name is not None and stored_name != layer.name:
            raise ModelFileError(f"{source}: weights group {path!r} belongs to layer "
                                 f"{stored_name!r}, but the config has {layer.name!r} there")
        if layer.inner is not None:
            inner_group = next((layer_group[g] for g in LAYERS_GROUPS if g in layer_group), None)
            if inner_group is None:
                raise ModelFileError(f"{source}: nested model {layer.name!r} has no layers "
                                     f"group under {path!r}")
            _assign_model(layer.inner, inner_group, f"{path}/layers", source)
        else:
            layer.weights = _saveable_weights(layer_group, layer.class_name, layer.config,
                                              path, source)


def load_keras3_layout_weights(spec: ModelSpec, root: h5py.Group, source: str) -> None:
    with hdf5_errors(source, "reading the weights"):
        layers_group = next((root[g] for g in LAYERS_GROUPS if g in root), None)
        if layers_group is None:
            raise ModelFileError(f"{source}: the weights file has no 'layers' group")
        _assign_model(spec, layers_group, "layers", source)
    finish_weights(spec, source)


def _read_member(archive: zipfile.ZipFile, member: str, source: str) -> bytes:
    try:
        return archive.read(member)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, RuntimeError) as exc:
        raise ModelFileError(f"{source}: damaged .keras archive ({member}): {exc}") from exc


def open_keras_zip(path: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ModelFileError(f"{path}: not a readable .keras (zip) archive: {exc}") from exc


def weights_h5_from_zip(archive: zipfile.ZipFile, source: str) -> h5py.File:
    names = archive.namelist()
    if WEIGHTS_FILE not in names:
        if "model.weights.json" in names or "model.weights.npz" in names:
            raise ModelFileError(f"{source}: sharded or npz weights in a .keras archive are not "
                                 "supported; save the model with the default h5 weights")
        raise ModelFileError(f"{source}: the .keras archive has no {WEIGHTS_FILE}")
    return open_hdf5(io.BytesIO(_read_member(archive, WEIGHTS_FILE, source)), source)


def _json_member(archive: zipfile.ZipFile, member: str, source: str):
    try:
        return json.loads(_read_member(archive, member, source).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{source}: {member} in the .keras archive is not valid JSON: "
                             f"{exc}") from exc


def read_keras_zip(path: str) -> ModelSpec:
    with open_keras_zip(path) as archive:
        names = archive.namelist()
        if CONFIG_FILE not in names:
            raise ModelFileError(f"{path}: zip archive without {CONFIG_FILE}: not a .keras model")
        model_json = _json_member(archive, CONFIG_FILE, path)
        metadata = _json_member(archive, METADATA_FILE, path) if METADATA_FILE in names else {}
        version = metadata.get("keras_version") if isinstance(metadata, dict) else None
        keras_major = resolve_keras_major(version, model_json, path)
        spec = model_spec_from_config(model_json, keras_major, path)
        with weights_h5_from_zip(archive, path) as weights:
            load_keras3_layout_weights(spec, weights, path)
    return spec
