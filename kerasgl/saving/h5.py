"""Legacy HDF5 files: Keras 2 / tf.keras `model.save("x.h5")`, Keras 3 `model.save("x.h5")`, and
the `save_weights` `.h5` files of Keras 2 (layout of keras/src/legacy/saving/legacy_h5_format.py).

Layout: root attrs `model_config` (JSON), `keras_version`, `backend`; group `model_weights` with
attr `layer_names` and one group per layer whose attr `weight_names` lists that layer's datasets
(paths relative to the layer group) in weight order. Attributes may be bytes or str, and big ones
are split into numbered chunks (H5Reader.text_list). All HDF5 access goes through H5Reader
(h5_safety.py): nothing outside the file is read, no declared size is trusted.
"""
from __future__ import annotations

import h5py

from ..errors import ModelFileError
from .config import model_spec_from_config, resolve_keras_major
from .h5_safety import H5Reader, open_h5_file
from .json_text import parse_config_json
from .spec import ModelSpec
from .weight_assign import NamedArrays, assign_legacy_weights


def is_legacy_weights_group(group: h5py.Group) -> bool:
    return "layer_names" in group.attrs or "layer_names0" in group.attrs


def read_legacy_weight_lists(reader: H5Reader, group: h5py.Group) -> dict[str, NamedArrays]:
    """{layer name: [(weight name, array), ...]} from a group with a `layer_names` attribute."""
    source = reader.source
    layer_names = reader.text_list(group, "layer_names") or []
    per_layer: dict[str, NamedArrays] = {}
    for layer_name in layer_names:
        layer_group = reader.group(group, layer_name)
        if layer_group is None:
            raise ModelFileError(f"{source}: weights group of layer {layer_name!r} is missing")
        weight_names = reader.text_list(layer_group, "weight_names") or []
        arrays: NamedArrays = []
        for weight_name in weight_names:
            dataset = reader.node(layer_group, weight_name)
            if dataset is None:
                raise ModelFileError(f"{source}: weight {weight_name!r} of layer "
                                     f"{layer_name!r} is listed but not stored")
            arrays.append((weight_name, reader.array(dataset, f"layer {layer_name!r}")))
        per_layer[layer_name] = arrays
    return per_layer


def load_legacy_weights(spec: ModelSpec, reader: H5Reader, group: h5py.Group) -> None:
    reader.tree = group.name
    assign_legacy_weights(spec, read_legacy_weight_lists(reader, group), reader.source)


def _keras_version(reader: H5Reader, weights: h5py.Group | None) -> str | None:
    version = reader.text(reader.f, "keras_version")
    if version is None and weights is not None:
        version = reader.text(weights, "keras_version")
    return version


def read_h5_model(path: str) -> ModelSpec:
    with open_h5_file(path, path) as reader:
        f = reader.f
        config_text = reader.text(f, "model_config")
        weights = reader.group(f, "model_weights")
        version = _keras_version(reader, weights)
        if config_text is None:
            if is_legacy_weights_group(f) or "layers" in f or "vars" in f:
                raise ModelFileError(
                    f"{path}: holds only weights (save_weights), no model config; read the "
                    "architecture with read_architecture_json() and then load_weights_into()")
            raise ModelFileError(f"{path}: HDF5 file without a Keras model config")
        model_json = parse_config_json(config_text, path, "the model_config attribute")
        keras_major = resolve_keras_major(version, model_json, path)
        spec = model_spec_from_config(model_json, keras_major, path)
        if weights is None:
            raise ModelFileError(f"{path}: has a model config but no 'model_weights' group")
        load_legacy_weights(spec, reader, weights)
        return spec
