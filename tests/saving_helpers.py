"""Helpers for tests/test_saving.py: walking ModelSpecs and comparing them with Keras objects."""
from __future__ import annotations

import contextlib
import os
import shutil
import zipfile

import h5py
import numpy as np

from kerasgl.saving.spec import LayerSpec, ModelSpec, TensorRef

KERAS2_DIR = os.path.join(os.path.dirname(__file__), "data", "keras2")
KERASJS_DIR = os.path.join(os.path.dirname(__file__), "data", "kerasjs")


def keras2_path(name: str) -> str:
    return os.path.join(KERAS2_DIR, name)


@contextlib.contextmanager
def edited_keras2_copy(name: str, path):
    """The Keras 2 test file `name` copied to `path` and open for editing (h5py, "r+")."""
    shutil.copyfile(keras2_path(name), path)
    with h5py.File(path, "r+") as f:
        yield f


def layer(spec: ModelSpec, path: str) -> LayerSpec:
    """A layer by "name" or "nested_model/inner_name"."""
    head, _, rest = path.partition("/")
    found = next((l for l in spec.layers if l.name == head), None)
    assert found is not None, f"no layer {head!r} in {[l.name for l in spec.layers]}"
    return layer(found.inner, rest) if rest else found


def refs_in(value) -> list[TensorRef]:
    if isinstance(value, TensorRef):
        return [value]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in refs_in(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in refs_in(v)]
    return []


def node_refs(spec_layer: LayerSpec) -> list[list[tuple]]:
    """Per call, the (layer, node, tensor) triples the call reads, in argument order."""
    return [[(r.layer, r.node_index, r.tensor_index) for r in refs_in([n.args, n.kwargs])]
            for n in spec_layer.inbound_nodes]


def keras3_config_histories(layer_config: dict) -> list[list[tuple]]:
    """The same, from a Keras 3 functional layer config entry (keras_history triples)."""
    def histories(value):
        if isinstance(value, dict):
            if value.get("class_name") == "__keras_tensor__":
                return [tuple(value["config"]["keras_history"])]
            return [h for v in value.values() for h in histories(v)]
        if isinstance(value, list):
            return [h for v in value for h in histories(v)]
        return []
    return [histories([node["args"], node["kwargs"]]) for node in layer_config["inbound_nodes"]]


def assert_weights_equal(actual: list, expected: list, what: str) -> None:
    assert len(actual) == len(expected), f"{what}: {len(actual)} arrays, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.shape == np.shape(e), f"{what}[{i}]: shape {a.shape} != {np.shape(e)}"
        np.testing.assert_array_equal(a, e, err_msg=f"{what}[{i}]")


def assert_spec_weights_match_keras(spec: ModelSpec, model) -> None:
    """Every Keras layer's get_weights() equals its LayerSpec's weights (nested models walked)."""
    for keras_layer in model.layers:
        spec_layer = layer(spec, keras_layer.name)
        if spec_layer.inner is not None:
            assert spec_layer.weights == []
            assert_spec_weights_match_keras(spec_layer.inner, keras_layer)
        else:
            assert_weights_equal(spec_layer.weights, keras_layer.get_weights(),
                                 f"{spec.name}/{keras_layer.name}")


def npz_weights(data, prefix: str) -> list[np.ndarray]:
    """weights/<prefix>/<i> arrays of a fixture npz, in index order."""
    keys = [k for k in data.files if k.startswith(f"weights/{prefix}/")
            and k[len(f"weights/{prefix}/"):].isdigit()]
    return [data[k] for k in sorted(keys, key=lambda k: int(k.rsplit("/", 1)[1]))]


def rewrite_keras_zip(src: str, dst: str, edit_weights) -> None:
    """Copy a .keras archive, letting `edit_weights(h5py.File)` change model.weights.h5."""
    with zipfile.ZipFile(src) as zin:
        members = {name: zin.read(name) for name in zin.namelist()}
    tmp = dst + ".weights.h5"
    with open(tmp, "wb") as f:
        f.write(members["model.weights.h5"])
    with h5py.File(tmp, "r+") as f:
        edit_weights(f)
    with open(tmp, "rb") as f:
        members["model.weights.h5"] = f.read()
    os.remove(tmp)
    with zipfile.ZipFile(dst, "w") as zout:
        for name, data in members.items():
            zout.writestr(name, data)
