"""tf.keras files whose functional models call TensorFlow functions on Keras tensors (TFOpLambda,
SlicingOpLambda, TensorFlowOpLayer), run by kerasgl without TensorFlow, against TensorFlow's own
outputs.

The fixtures in tests/data/tf_ops are written by scripts/make_tf_op_fixtures.py under TensorFlow
and tf-keras 2.21: `<name>.h5` and `<name>.npz` (input_i fed to tf-keras' predict, output_i what it
returned); MANIFEST.json lists the functions and NodeDef ops each one holds, and the one file
tf-keras itself cannot load (einsum_operands_lost), which kerasgl must refuse. TensorFlow's
int64 results (argmax, tf.shape) are kerasgl's int32 and are compared as such.

Refusals are checked on fixtures rewritten here (their config edited with h5py).
"""
from __future__ import annotations

import json
import os
import shutil

import h5py
import numpy as np
import pytest

import kerasgl as kg
from keras_ref import assert_close
from kerasgl.layers.tf_ops.functions import lookup
from kerasgl.layers.tf_ops.node_def import OPS

DATA = os.path.join(os.path.dirname(__file__), "data", "tf_ops")
with open(os.path.join(DATA, "MANIFEST.json")) as _f:
    MANIFEST = json.load(_f)
UNLOADABLE = set(MANIFEST["unloadable_in_tf_keras"])
RUNNABLE = sorted(set(MANIFEST["fixtures"]) - UNLOADABLE)
# kerasgl's dtype for each dtype TensorFlow returns (kerasgl tensors are float32, int32, bool).
KERASGL_DTYPE = {"float32": np.float32, "int64": np.int32, "int32": np.int32, "bool": np.bool_}


def arrays(data, prefix: str) -> list[np.ndarray]:
    keys = sorted((k for k in data.files if k.startswith(prefix)), key=lambda k: int(k[len(prefix):]))
    return [data[k] for k in keys]


def fixture(name: str):
    data = np.load(os.path.join(DATA, f"{name}.npz"))
    expected = [e.astype(KERASGL_DTYPE[str(e.dtype)]) for e in arrays(data, "output_")]
    return os.path.join(DATA, f"{name}.h5"), arrays(data, "input_"), expected


def predict(model, inputs) -> list[np.ndarray]:
    result = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    return result if isinstance(result, list) else [result]


def rewritten(tmp_path, name: str, change) -> str:
    """A copy of fixture `name` whose model config `change(layers by name)` edited."""
    path = str(tmp_path / f"{name}.h5")
    shutil.copy(os.path.join(DATA, f"{name}.h5"), path)
    with h5py.File(path, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        change({layer["name"]: layer for layer in config["config"]["layers"]})
        f.attrs["model_config"] = json.dumps(config)
    return path


# -- TensorFlow's outputs ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", RUNNABLE)
def test_fixture_matches_tensorflow(name):
    path, inputs, expected = fixture(name)
    with kg.load_model(path) as model:
        actual = predict(model, inputs)
    assert len(actual) == len(expected), f"{name}: {len(actual)} outputs, TensorFlow has {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, what=f"{name} output {i}")


def test_every_recorded_function_and_op_is_known():
    """Each function and NodeDef op the fixtures hold is in kerasgl's tables (einsum too: its
    entry refuses the file whose operands were lost)."""
    assert [f for f in MANIFEST["all_functions"] if lookup(f) is None] == []
    ops = {op for found in MANIFEST["tensorflow_op_layer_ops"].values() for op in found}
    assert ops and ops <= set(OPS)


@pytest.mark.parametrize("name", ["reductions", "cast_onehot_shape", "comparisons_and_where"])
def test_int_and_bool_outputs_are_kerasgl_int32_and_bool(name):
    """argmax / tf.shape (int64 in TensorFlow) come out int32, casts and comparisons int32 and
    bool, as the model declares at load."""
    path, inputs, expected = fixture(name)
    with kg.load_model(path) as model:
        declared = [spec.dtype for spec in model.outputs]
        actual = predict(model, inputs)
    kinds = [str(e.dtype) for e in expected]
    assert {"int32", "bool"} & set(kinds), f"{name} has no int or bool output"
    assert [str(a.dtype) for a in actual] == kinds
    assert declared == kinds


@pytest.mark.parametrize("name", ["cast_onehot_shape", "image_resize_up", "layout_ops",
                                  "tf_op_layer_graph_mode"])
def test_other_batch_sizes_and_replayed_plans(name):
    """Shape-derived sizes (a reshape's batch entry, tf.shape uploaded per call) follow the batch
    size predict is given; repeated calls (replayed by execution plans) agree."""
    path, inputs, expected = fixture(name)
    batch = len(inputs[0])
    with kg.load_model(path) as model:
        for rows in (1, batch, 1, 2, batch):
            actual = predict(model, [x[:rows] for x in inputs])
            for i, (a, e) in enumerate(zip(actual, expected)):
                if e.ndim == 0 or e.shape[0] != batch or (name == "cast_onehot_shape" and i == 19):
                    continue       # no batch axis, or (output 19) the batch size is the value
                assert_close(a, e[:rows], what=f"{name} output {i} at batch {rows}")


# -- refusals -------------------------------------------------------------------------------------
def test_einsum_without_its_operands_is_refused_at_load():
    with pytest.raises(kg.UnsupportedLayerError,
                       match=r"Layer 'tf\.einsum' \(TFOpLambda\): a tf\.einsum call saved without "
                             r"its operands .*'bij,bjk->bik'"):
        kg.load_model(os.path.join(DATA, "einsum_operands_lost.h5"))


def test_an_unknown_function_is_refused_by_name(tmp_path):
    def change(layers):
        layers["tf.math.sigmoid"]["config"]["function"] = "math.cumsum"
    path = rewritten(tmp_path, "elementwise_unary", change)
    with pytest.raises(kg.UnsupportedLayerError,
                       match=r"Layer 'tf\.math\.sigmoid' \(TFOpLambda\): the TensorFlow function "
                             r"tf\.math\.cumsum"):
        kg.load_model(path)


def test_an_unknown_node_def_op_is_refused_by_name(tmp_path):
    def change(layers):
        layers["tf_op_layer_Relu"]["config"]["node_def"]["op"] = "Cumsum"
    path = rewritten(tmp_path, "tf_op_layer_graph_mode", change)
    with pytest.raises(kg.UnsupportedLayerError,
                       match=r"'tf_op_layer_Relu' \(TensorFlowOpLayer\): the TensorFlow op Cumsum"):
        kg.load_model(path)


def test_a_size_known_only_at_predict_is_refused_at_load(tmp_path):
    """tf.image.resize to tf.shape(skip)[0:2]: the batch size would be a height."""
    def change(layers):
        layers["tf.__operators__.getitem"]["inbound_nodes"][0][3]["slice_spec"].update(
            start=0, stop=2)
    path = rewritten(tmp_path, "image_resize_up", change)
    with pytest.raises(kg.UnsupportedLayerError,
                       match=r"'tf\.image\.resize_22' \(TFOpLambda\): tf\.image\.resize with size = "
                             r"\[batch, 11\] \(sizes known only when the model runs\)"):
        kg.load_model(path)


def test_a_reduction_over_the_batch_axis_is_refused_at_load(tmp_path):
    def change(layers):
        layers["tf.math.reduce_sum"]["inbound_nodes"][0][3]["axis"] = 0
    path = rewritten(tmp_path, "reductions", change)
    with pytest.raises(kg.UnsupportedLayerError,
                       match=r"'tf\.math\.reduce_sum' \(TFOpLambda\): tf\.math\.reduce_sum with a "
                             r"reduction over the batch axis"):
        kg.load_model(path)
