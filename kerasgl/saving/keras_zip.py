"""Keras 3 `.keras` archives (also the `.keras` files of tf.keras >= 2.13): a zip holding
`config.json`, `metadata.json` and `model.weights.h5`. Keras 3 `.weights.h5` files use the same
weights layout, so `load_keras3_layout_weights` serves `load_weights_into` too.

Weights layout (keras/src/saving/saving_lib.py): a model's layers are stored under
`layers/<snake_case(class name)>[_N]` in `model.layers` order (`dense`, `dense_1`, ...; a
Sequential's InputLayer and Functional op nodes are not in `model.layers`), each with `vars/0..n`
for the layer's own variables and one subgroup per sub-layer attribute (`forward_layer`,
`backward_layer`, `cell`, `layer`, ...), lists of sub-layers as containers of groups. A nested
model has `layers/...` of its own. tf.keras 2.13-2.15 wrote `_layer_checkpoint_dependencies`
instead of `layers`.

The archive is read through KerasZip (zip_archive.py: bounded member reads) and the weights file
through H5Reader (h5_safety.py: no links out of the file, no declared size trusted); the walk
below also bounds the depth of the groups it recurses into (limits.MAX_GROUP_DEPTH).
"""
from __future__ import annotations

import contextlib
import io
import re

import h5py

from ..errors import ModelFileError
from .config import model_spec_from_config, resolve_keras_major
from .h5_safety import H5Reader, open_h5_bytes
from .json_text import parse_config_json
from .layer_rules import saved_class_name
from .limits import MAX_CONFIG_BYTES, MAX_GROUP_DEPTH, MAX_METADATA_BYTES, MAX_WEIGHTS_BYTES
from .spec import LayerSpec, ModelSpec
from .weight_assign import finish_weights, stores_weights
from .zip_archive import KerasZip

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


def _own_vars(reader: H5Reader, group: h5py.Group, where: str, owner: str) -> list:
    vars_group = reader.group(group, "vars")
    if vars_group is None:
        return []
    keys = reader.names(vars_group)
    if keys == ["idf_weights"]:     # IndexLookup.save_own_variables (tf_idf lookup layers)
        dataset = reader.node(vars_group, "idf_weights")
        return [reader.array(dataset, owner)] if dataset is not None else []
    if sorted(keys) != sorted(str(i) for i in range(len(keys))):
        raise ModelFileError(f"{reader.source}: unexpected variable names {keys[:20]} in "
                             f"{where}/vars")
    arrays = []
    for i in range(len(keys)):
        dataset = reader.node(vars_group, str(i))
        if dataset is None:
            raise ModelFileError(f"{reader.source}: {where}/vars/{i} points nowhere")
        arrays.append(reader.array(dataset, owner))
    return arrays


def _saveable_weights(reader: H5Reader, group: h5py.Group, class_name: str | None,
                      config: dict | None, where: str, owner: str, depth: int = 0) -> list:
    """A layer's arrays in get_weights() order: its own variables, then its sub-layers'."""
    if depth > MAX_GROUP_DEPTH:
        raise ModelFileError(f"{reader.source}: weights groups nest deeper than "
                             f"{MAX_GROUP_DEPTH} levels under {where!r}")
    reader.enter(group)
    weights = _own_vars(reader, group, where, owner)
    children = [name for name in reader.names(group) if name != "vars"]
    for attr in _ordered_children(class_name, children):
        child = reader.group(group, attr)
        if child is None:          # a dangling soft link
            raise ModelFileError(f"{reader.source}: {where}/{attr} points nowhere")
        if "vars" in child:
            sub_class, sub_config = _sublayer_config(config, attr)
            weights += _saveable_weights(reader, child, sub_class, sub_config, f"{where}/{attr}",
                                         owner, depth + 1)
        else:
            reader.enter(child)
            items = reader.names(child)
            for index, item in enumerate(_container_order(config, attr, items)):
                sub_class, sub_config = _item_config(config, attr, index)
                item_group = reader.group(child, item)
                if item_group is None:
                    raise ModelFileError(f"{reader.source}: {where}/{attr}/{item} points nowhere")
                weights += _saveable_weights(reader, item_group, sub_class, sub_config,
                                             f"{where}/{attr}/{item}", owner, depth + 2)
    return weights


def _saved_layers(spec: ModelSpec) -> list[LayerSpec]:
    """The layers Keras writes, in `model.layers` order."""
    layers = [layer for layer in spec.layers if stores_weights(layer)
              or (layer.class_name == "InputLayer" and spec.kind == "Functional")]
    return layers


def _assign_model(spec: ModelSpec, reader: H5Reader, group: h5py.Group, where: str,
                  depth: int = 0) -> None:
    source = reader.source
    if depth > MAX_GROUP_DEPTH:
        raise ModelFileError(f"{source}: nested models nest deeper than {MAX_GROUP_DEPTH} "
                             f"levels at {where!r}")
    used: dict[str, int] = {}
    for layer in _saved_layers(spec):
        group_name = _unique_name(snake_case(saved_class_name(layer.class_name)), used)
        path = f"{where}/{group_name}"
        layer_group = reader.group(group, group_name)
        if layer_group is None:
            raise ModelFileError(f"{source}: no weights group {path!r} for layer {layer.name!r} "
                                 f"({layer.class_name})")
        vars_group = reader.group(layer_group, "vars")
        stored_name = reader.text(vars_group, "name") if vars_group is not None else None
        if stored_name is not None and stored_name != layer.name:
            raise ModelFileError(f"{source}: weights group {path!r} belongs to layer "
                                 f"{stored_name!r}, but the config has {layer.name!r} there")
        if layer.inner is not None:
            inner_group = next((g for g in (reader.group(layer_group, name)
                                            for name in LAYERS_GROUPS) if g is not None), None)
            if inner_group is None:
                raise ModelFileError(f"{source}: nested model {layer.name!r} has no layers "
                                     f"group under {path!r}")
            reader.enter(inner_group)
            _assign_model(layer.inner, reader, inner_group, f"{path}/layers", depth + 1)
        else:
            layer.weights = _saveable_weights(reader, layer_group,
                                              saved_class_name(layer.class_name),
                                              layer.config, path, f"layer {layer.name!r}")


def load_keras3_layout_weights(spec: ModelSpec, reader: H5Reader) -> None:
    """Fill `spec` from a Keras 3 weights file (a .keras member or a .weights.h5)."""
    layers_group = next((g for g in (reader.group(reader.f, name) for name in LAYERS_GROUPS)
                         if g is not None), None)
    if layers_group is None and _has_windows_paths(reader):
        with _with_slashes(reader) as rewritten:
            load_keras3_layout_weights(spec, rewritten)
        return
    if layers_group is None:
        raise ModelFileError(f"{reader.source}: the weights file has no 'layers' group")
    reader.tree = layers_group.name
    _assign_model(spec, reader, layers_group, "layers")
    finish_weights(spec, reader.source)


# Keras 2.15 built the weights file's paths with os.path.join: on Windows its groups are one level
# deep, named "layers\\conv1d", "layers\\sequential\\layers\\dense" (HDF5 separates by "/" only).
def _has_windows_paths(reader: H5Reader) -> bool:
    return any(name.split("\\")[0] in LAYERS_GROUPS and "\\" in name
               for name in reader.names(reader.f))


@contextlib.contextmanager
def _with_slashes(reader: H5Reader):
    """A reader on an in-memory copy of the file with each backslash of a group name made a
    level of groups. Everything is read through `reader` (and its checks) on the way."""
    copy = h5py.File(io.BytesIO(), "w")
    try:
        _copy_group(reader, reader.f, copy, "", 0)
        yield H5Reader(copy, reader.source, reader.size, reader.label)
    finally:
        copy.close()


def _copy_group(reader: H5Reader, group, target, where: str, depth: int) -> None:
    if depth > MAX_GROUP_DEPTH:
        raise ModelFileError(f"{reader.source}: weights groups nest deeper than "
                             f"{MAX_GROUP_DEPTH} levels under {where!r}")
    for name in reader.names(group):
        if depth == 0 and name.split("\\")[0] not in LAYERS_GROUPS:
            continue           # only the layers' weights are read (not the optimizer's)
        node = reader.node(group, name)
        path = "/".join(part for part in name.split("\\") if part)
        if node is None or not path or any(part == "." for part in path.split("/")):
            raise ModelFileError(f"{reader.source}: weights group {where}/{name!r} points "
                                 "nowhere or is not a plain path")
        if isinstance(node, h5py.Group):
            reader.enter(node)
            _copy_group(reader, node, target.require_group(path), f"{where}/{name}", depth + 1)
        else:
            target.create_dataset(path, data=reader.array(node, f"{where}/{name}"))
    stored_name = reader.text(group, "name")
    if stored_name is not None:
        target.attrs["name"] = stored_name


def weights_from_zip(archive: KerasZip):
    """The archive's model.weights.h5, as an H5Reader context."""
    names = archive.names()
    if WEIGHTS_FILE not in names:
        if "model.weights.json" in names or "model.weights.npz" in names:
            raise ModelFileError(f"{archive.path}: sharded or npz weights in a .keras archive "
                                 "are not supported; save the model with the default h5 weights")
        raise ModelFileError(f"{archive.path}: the .keras archive has no {WEIGHTS_FILE}")
    return open_h5_bytes(archive.read(WEIGHTS_FILE, MAX_WEIGHTS_BYTES), archive.path,
                         WEIGHTS_FILE)


def read_keras_zip(path: str) -> ModelSpec:
    with KerasZip(path) as archive:
        if CONFIG_FILE not in archive:
            raise ModelFileError(f"{path}: zip archive without {CONFIG_FILE}: not a .keras model")
        model_json = parse_config_json(archive.read(CONFIG_FILE, MAX_CONFIG_BYTES), path,
                                       CONFIG_FILE)
        metadata = parse_config_json(archive.read(METADATA_FILE, MAX_METADATA_BYTES), path,
                                     METADATA_FILE) if METADATA_FILE in archive else {}
        version = metadata.get("keras_version") if isinstance(metadata, dict) else None
        keras_major = resolve_keras_major(version, model_json, path)
        spec = model_spec_from_config(model_json, keras_major, path)
        with weights_from_zip(archive) as weights:
            load_keras3_layout_weights(spec, weights)
    return spec
