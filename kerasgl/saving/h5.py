"""Legacy HDF5 files: Keras 2 / tf.keras `model.save("x.h5")`, Keras 3 `model.save("x.h5")`, and
the `save_weights` `.h5` files of Keras 2 (layout of keras/src/legacy/saving/legacy_h5_format.py).

Layout: root attrs `model_config` (JSON), `keras_version`, `backend`; group `model_weights` with
attr `layer_names` and one group per layer whose attr `weight_names` lists that layer's datasets
(paths relative to the layer group) in weight order. Attributes may be bytes or str, and big ones
are split into numbered chunks (h5_utils.text_list_attr).
"""
from __future__ import annotations

import json

import h5py

from ..errors import ModelFileError
from .config import model_spec_from_config, resolve_keras_major
from .h5_utils import hdf5_errors, open_hdf5, read_array, text_attr, text_list_attr
from .spec import ModelSpec
from .weight_assign import NamedArrays, assign_legacy_weights


def is_legacy_weights_group(group: h5py.Group) -> bool:
    return "layer_names" in group.attrs or "layer_names0" in group.attrs


def read_legacy_weight_lists(group: h5py.Group, source: str) -> dict[str, NamedArrays]:
    """{layer name: [(weight name, array), ...]} from a group with a `layer_names` attribute."""
    with hdf5_errors(source, "reading the weights"):
        layer_names = text_list_attr(group, "layer_names") or []
        per_layer: dict[str, NamedArrays] = {}
        for layer_name in layer_names:
            if layer_name not in group:
                raise ModelFileError(f"{source}: weights group of layer {layer_name!r} is missing")
            layer_group = group[layer_name]
            weight_names = text_list_attr(layer_group, "weight_names") or []
            arrays: NamedArrays = []
            for weight_name in weight_names:
                if weight_name not in layer_group:
                    raise ModelFileError(f"{source}: weight {weight_name!r} of layer "
                                         f"{layer_name!r} is listed but not stored")
                arrays.append((weight_name, read_array(layer_group[weight_name])))
            per_layer[layer_name] = arrays
        return per_layer


def load_legacy_weights(spec: ModelSpec, group: h5py.Group, source: str) -> None:
    assign_legacy_weights(spec, read_legacy_weight_lists(group, source), source)


def _keras_version(f: h5py.File) -> str | None:
    version = text_attr(f, "keras_version")
    if version is None and "model_weights" in f:
        version = text_attr(f["model_weights"], "keras_version")
    return version


def parse_model_config_text(text: str, source: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"{source}: the model config is not valid JSON: {exc}") from exc


def read_h5_model(path: str) -> ModelSpec:
    f = open_hdf5(path, path)
    try:
        with hdf5_errors(path, "reading the model config"):
            config_text = text_attr(f, "model_config")
            has_weights = "model_weights" in f
            version = _keras_version(f)
            weights_only = is_legacy_weights_group(f) or "layers" in f or "vars" in f
        if config_text is None:
            if weights_only:
                raise ModelFileError(
                    f"{path}: holds only weights (save_weights), no model config; read the "
                    "architecture with read_architecture_json() and then load_weights_into()")
            raise ModelFileError(f"{path}: HDF5 file without a Keras model config")
        model_json = parse_model_config_text(config_text, path)
        keras_major = resolve_keras_major(version, model_json, path)
        spec = model_spec_from_config(model_json, keras_major, path)
        if not has_weights:
            raise ModelFileError(f"{path}: has a model config but no 'model_weights' group")
        load_legacy_weights(spec, f["model_weights"], path)
        return spec
    finally:
        f.close()
