"""kerasgl.saving: Keras files -> ModelSpec. No GL is used by the code under test.

- Keras 2 files: tests/data/keras2 (written by scripts/make_keras2_fixtures.py under tf-keras;
  no TensorFlow needed here). Each .npz holds the layer weights Keras 2 reported.
- Keras 3 files: small models built and saved here with Keras 3 (JAX backend) in tmp_path,
  compared with layer.get_weights() and model.get_config().
- Damaged files and Lambda layers: ModelFileError naming the path; nothing is ever executed.
- Keras.js conformance h5 files (Keras 3 legacy): read from tests/data/kerasjs when present.
"""
from __future__ import annotations

import builtins
import json
import marshal
import os
import pickle
import shutil
import zipfile

os.environ.setdefault("KERAS_BACKEND", "jax")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kerasgl.errors import ModelFileError  # noqa: E402
from kerasgl.saving import (TensorRef, load_weights_into, read_architecture_json,  # noqa: E402
                            read_model)
from saving_helpers import (KERASJS_DIR, assert_spec_weights_match_keras,  # noqa: E402
                            assert_weights_equal, edited_keras2_copy, keras2_path,
                            keras3_config_histories, layer, node_refs, npz_weights,
                            rewrite_keras_zip)

# Keras' JAX backend (not kerasgl) trips NumPy 2's __array__(copy=...) deprecation on every save.
pytestmark = pytest.mark.filterwarnings(
    "ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")

KERAS2_MODELS = ["mlp_sequential", "legacy_sequential_list", "cnn_functional",
                 "two_inputs_shared", "nested_sequential", "hard_sigmoid", "chunked_attrs",
                 "rnn_wrappers", "tf_op_lambda", "legacy_sequential_dict_cnn", "rnn_time_major",
                 "lstm_keras2_defaults", "bidirectional_wrappers", "time_distributed_wrappers",
                 "conv_groups_and_transpose", "conv_pool_2d", "conv_pool_1d",
                 "merge_and_activations", "batchnorm_variants", "embedding_input_length",
                 "upsampling_other_interpolations", "core_and_preprocessing", "masked_sequences",
                 "attention_layers"]


def npz(name: str):
    return np.load(keras2_path(f"{name}.npz"))


# ============================================================================ Keras 2 fixtures

@pytest.mark.parametrize("name", KERAS2_MODELS)
def test_keras2_fixture_reads_with_its_inputs_and_outputs(name):
    spec = read_model(keras2_path(f"{name}.h5"))
    data = npz(name)
    assert spec.keras_major == 2
    assert spec.source == keras2_path(f"{name}.h5")
    inputs = sorted(k for k in data.files if k.startswith("input_"))
    outputs = sorted(k for k in data.files if k.startswith("output_"))
    assert len(inputs) == len(spec.input_shapes) == len(spec.input_dtypes)
    assert outputs and (spec.kind == "Sequential" or len(outputs) == len(spec.outputs))
    for key, shape, dtype in zip(inputs, spec.input_shapes, spec.input_dtypes):
        assert shape[0] is None and list(data[key].shape[1:]) == shape[1:]
        assert dtype == data[key].dtype.name


def test_keras2_sequential_mlp_with_batch_input_shape():
    spec = read_model(keras2_path("mlp_sequential.h5"))
    data = npz("mlp_sequential")
    assert spec.kind == "Sequential" and spec.name == "mlp"
    assert [l.class_name for l in spec.layers] == ["InputLayer", "Dense", "Dropout", "Dense"]
    assert spec.inputs == [] and spec.outputs == []
    assert spec.input_shapes == [[None, 4]] and spec.input_dtypes == ["float32"]
    hidden = layer(spec, "hidden")
    assert hidden.config["activation"] == "relu" and hidden.config["units"] == 8
    assert "batch_input_shape" not in hidden.config          # moved to the InputLayer
    assert hidden.config["dtype"] == "float32"
    assert layer(spec, "probs").config["activation"] == "softmax"
    assert all(l.inbound_nodes == [] for l in spec.layers)
    for name in ("hidden", "drop", "probs"):
        assert_weights_equal(layer(spec, name).weights, npz_weights(data, name), name)


def test_keras2_bare_list_sequential_without_input_layer_gets_one():
    """Old Keras 2 form: config is a bare list, the first layer carries batch_input_shape."""
    with h5py.File(keras2_path("legacy_sequential_list.h5")) as f:
        raw = json.loads(f.attrs["model_config"])
    assert isinstance(raw["config"], list) and raw["config"][0]["class_name"] == "Dense"
    spec = read_model(keras2_path("legacy_sequential_list.h5"))
    assert [l.class_name for l in spec.layers] == ["InputLayer", "Dense", "Dropout", "Dense"]
    assert spec.layers[0].name == "hidden_input"            # the name Keras 2 gave it
    assert spec.layers[0].config["batch_shape"] == [None, 4]
    assert spec.input_shapes == [[None, 4]]
    data = npz("legacy_sequential_list")
    assert_weights_equal(layer(spec, "probs").weights, npz_weights(data, "probs"), "probs")


def test_keras2_functional_cnn():
    spec = read_model(keras2_path("cnn_functional.h5"))
    data = npz("cnn_functional")
    assert spec.kind == "Functional"
    assert [l.class_name for l in spec.layers] == [
        "InputLayer", "Conv2D", "BatchNormalization", "MaxPooling2D", "Flatten", "Dense"]
    assert spec.inputs == [TensorRef("image", 0, 0)]
    assert spec.outputs == [TensorRef("classes", 0, 0)]
    assert spec.input_shapes == [[None, 8, 8, 3]]
    assert node_refs(layer(spec, "conv")) == [[("image", 0, 0)]]
    assert node_refs(layer(spec, "classes")) == [[("flat", 0, 0)]]
    assert layer(spec, "bn").config["axis"] == 3              # Keras 2 wrote [3]
    assert layer(spec, "classes").config["activation"] == "softmax"
    for name in ("conv", "bn", "classes"):
        assert_weights_equal(layer(spec, name).weights, npz_weights(data, name), name)
    gamma, beta, mean, var = layer(spec, "bn").weights     # get_weights() order
    assert not np.allclose(var, 1) and not np.allclose(mean, 0)


def test_keras2_two_inputs_two_outputs_shared_layer():
    spec = read_model(keras2_path("two_inputs_shared.h5"))
    data = npz("two_inputs_shared")
    assert spec.inputs == [TensorRef("in_a", 0, 0), TensorRef("in_b", 0, 0)]
    assert spec.outputs == [TensorRef("head_sum", 0, 0), TensorRef("head_diff", 0, 0)]
    assert spec.input_shapes == [[None, 5], [None, 5]]
    shared = layer(spec, "shared")
    assert node_refs(shared) == [[("in_a", 0, 0)], [("in_b", 0, 0)]]
    merge = layer(spec, "merge").inbound_nodes[0]
    # a call with a list stays a list in the first argument
    assert merge.args == [[TensorRef("shared", 0, 0), TensorRef("shared", 1, 0)]]
    assert_weights_equal(shared.weights, npz_weights(data, "shared"), "shared")
    assert_weights_equal(layer(spec, "head_sum").weights, npz_weights(data, "head_sum"), "head")


def test_keras2_nested_sequential_called_twice():
    """Keras 2 counts a nested model's built-in call in node indices; the spec does not, and the
    nested model's flat weight list (all trainable, then all non-trainable) is split per layer."""
    with h5py.File(keras2_path("nested_sequential.h5")) as f:
        raw = json.loads(f.attrs["model_config"])
    raw_sum = next(l for l in raw["config"]["layers"] if l["name"] == "sum")
    assert [e[1] for e in raw_sum["inbound_nodes"][0]] == [1, 2]       # as Keras 2 wrote them
    spec = read_model(keras2_path("nested_sequential.h5"))
    data = npz("nested_sequential")
    block = layer(spec, "block")
    assert block.class_name == "Sequential" and block.inner is not None and block.weights == []
    assert node_refs(block) == [[("x", 0, 0)], [("pre", 0, 0)]]
    assert node_refs(layer(spec, "sum")) == [[("block", 0, 0), ("block", 1, 0)]]
    assert [l.class_name for l in block.inner.layers] == [
        "InputLayer", "Dense", "BatchNormalization", "Dense"]
    assert block.inner.input_shapes == [[None, 6]]
    for name in ("inner_dense", "inner_bn", "inner_out"):
        assert_weights_equal(layer(spec, f"block/{name}").weights,
                             npz_weights(data, f"block/{name}"), name)


def test_keras2_hard_sigmoid_is_named_and_marked_keras2():
    spec = read_model(keras2_path("hard_sigmoid.h5"))
    data = npz("hard_sigmoid")
    assert spec.keras_major == 2
    assert layer(spec, "dense_hs").config["activation"] == "hard_sigmoid"
    assert layer(spec, "act_hs").config["activation"] == "hard_sigmoid"
    x = data["input_0"]
    np.testing.assert_allclose(data["output_1"], np.clip(0.2 * x + 0.5, 0, 1), atol=1e-6)


def test_keras2_chunked_layer_and_weight_names():
    path = keras2_path("chunked_attrs.h5")
    with h5py.File(path) as f:
        assert "layer_names" not in f["model_weights"].attrs
        assert "layer_names1" in f["model_weights"].attrs
        assert "weight_names1" in f["model_weights/deep_block"].attrs
    spec = read_model(path)
    data = npz("chunked_attrs")
    assert len(spec.layers) == 1 + 1 + 44
    block = layer(spec, "deep_block").inner
    dense = [l for l in block.layers if l.class_name == "Dense"]
    assert len(dense) == 24
    for d in dense:
        assert_weights_equal(d.weights, npz_weights(data, f"deep_block/{d.name}"), d.name[:8])


def test_keras2_rnn_wrappers_keep_all_arrays_in_one_list():
    spec = read_model(keras2_path("rnn_wrappers.h5"))
    data = npz("rnn_wrappers")
    bi = layer(spec, "bilstm")
    assert bi.config["layer"]["class_name"] == "LSTM"
    assert bi.config["layer"]["config"]["dtype"] == "float32"       # sub-layer normalised too
    assert bi.config["layer"]["config"]["recurrent_activation"] == "sigmoid"
    assert len(bi.weights) == 6
    assert layer(spec, "gru").config["reset_after"] is True
    for name in ("bilstm", "per_step", "gru", "out"):
        assert_weights_equal(layer(spec, name).weights, npz_weights(data, name), name)


def test_keras2_tf_op_lambda_layers_stay_layers_with_their_constants():
    spec = read_model(keras2_path("tf_op_lambda.h5"))
    mul, add = [l for l in spec.layers if l.class_name == "TFOpLambda"]
    assert mul.module is None and mul.config["function"] == "math.multiply"
    assert node_refs(mul) == [[("dense", 0, 0)]]
    assert mul.inbound_nodes[0].kwargs["y"] == 2.0
    assert add.inbound_nodes[0].kwargs["y"] == 1.0
    assert spec.outputs == [TensorRef(add.name, 0, 0)]


def test_keras2_to_json_plus_save_weights():
    arch_path = keras2_path("json_model.json")
    data = npz("json_model")
    for source in (arch_path, open(arch_path).read()):
        spec = read_architecture_json(source)
        assert spec.keras_major == 2
        assert all(l.weights == [] for l in spec.layers)
        assert load_weights_into(spec, keras2_path("json_model.weights.h5")) is spec
        assert spec.input_shapes == [[None, 4]]
        for name in ("inner_model/inner_dense", "inner_model/inner_bn", "head"):
            assert_weights_equal(layer(spec, name).weights, npz_weights(data, name), name)


@pytest.mark.parametrize("name", ["nested_sequential", "rnn_wrappers"])
def test_keras2_dialect_in_a_keras_zip(name):
    """tf.keras >= 2.13 also writes .keras archives: Keras 2 config, Keras 3 weights layout."""
    zipped = read_model(keras2_path(f"{name}.keras"))
    legacy = read_model(keras2_path(f"{name}.h5"))
    assert zipped.keras_major == 2
    assert [l.name for l in zipped.layers] == [l.name for l in legacy.layers]
    data = npz(name)
    for l in zipped.layers:
        assert node_refs(l) == node_refs(layer(legacy, l.name))
        if l.inner is not None:
            for inner in l.inner.layers:
                assert_weights_equal(inner.weights, npz_weights(data, f"{l.name}/{inner.name}"),
                                     inner.name)
        else:
            assert_weights_equal(l.weights, npz_weights(data, l.name), l.name)


def test_keras2_dict_sequential_without_input_layer_gets_one():
    """Keras 2.2 - 2.12 form: a dict config whose first layer carries batch_input_shape."""
    with h5py.File(keras2_path("legacy_sequential_dict_cnn.h5")) as f:
        raw = json.loads(f.attrs["model_config"])
    assert isinstance(raw["config"], dict) and raw["config"]["layers"][0]["class_name"] == "Conv2D"
    spec = read_model(keras2_path("legacy_sequential_dict_cnn.h5"))
    assert spec.kind == "Sequential" and spec.name == "cnn_k2"
    assert [l.class_name for l in spec.layers][:2] == ["InputLayer", "Conv2D"]
    assert spec.layers[0].name == "conv1_input"
    assert spec.input_shapes == [[None, 8, 8, 2]]
    assert "batch_input_shape" not in layer(spec, "conv1").config
    data = npz("legacy_sequential_dict_cnn")
    for name in ("conv1", "bn1", "conv2", "probs"):
        assert_weights_equal(layer(spec, name).weights, npz_weights(data, name), name)


def _raw_layer_configs(name: str) -> dict:
    with h5py.File(keras2_path(f"{name}.h5")) as f:
        raw = json.loads(f.attrs["model_config"])
    return {entry["name"]: entry["config"] for entry in raw["config"]["layers"]}


def test_keras2_groups_dropped_where_keras3_has_no_such_argument():
    raw = _raw_layer_configs("conv_groups_and_transpose")
    assert raw["dw"]["groups"] == 1 and raw["convT_groups2_ignored"]["groups"] == 2
    spec = read_model(keras2_path("conv_groups_and_transpose.h5"))
    for name in ("dw", "convT_groups2_ignored", "convT_stride_gt_kernel", "convT_dilated"):
        assert "groups" not in layer(spec, name).config, name
    assert layer(spec, "conv_groups2").config["groups"] == 2     # Conv2D's groups is real
    assert layer(spec, "convT_groups2_ignored").weights[0].shape == (3, 3, 4, 4)   # ungrouped
    sep = read_model(keras2_path("conv_pool_2d.h5"))
    assert "groups" in _raw_layer_configs("conv_pool_2d")["sep"]
    assert "groups" not in layer(sep, "sep").config
    assert layer(sep, "conv_s2").config["groups"] == 1
    td = read_model(keras2_path("time_distributed_wrappers.h5"))
    assert "groups" not in layer(td, "td_dw").config["layer"]["config"]   # inside a wrapper too
    assert "groups" not in layer(td, "td_convT").config["layer"]["config"]


def test_keras2_time_major_is_kept_for_the_rnn_layers():
    spec = read_model(keras2_path("rnn_time_major.h5"))
    for name in ("lstm_tm", "gru_tm", "rnn_tm_last"):
        assert layer(spec, name).config["time_major"] is True, name
    assert layer(spec, "gru_tm").config["reset_after"] is False
    assert spec.input_shapes == [[None, 3, 4]]        # axis 0 is time for these layers
    bi = read_model(keras2_path("bidirectional_wrappers.h5"))
    sub = layer(bi, "bi_sum_custom_backward").config
    assert sub["layer"]["config"]["time_major"] is False
    assert sub["backward_layer"]["config"]["go_backwards"] is True
    assert sub["backward_layer"]["config"]["reset_after"] is False


def test_keras2_recurrent_hard_sigmoid_keeps_its_name():
    spec = read_model(keras2_path("lstm_keras2_defaults.h5"))
    assert spec.keras_major == 2
    assert layer(spec, "lstm_hs").config["recurrent_activation"] == "hard_sigmoid"
    assert layer(spec, "gru_v1").config["recurrent_activation"] == "hard_sigmoid"


def test_keras2_batchnorm_axis_lists_and_renorm_weights():
    spec = read_model(keras2_path("batchnorm_variants.h5"))
    data = npz("batchnorm_variants")
    raw = _raw_layer_configs("batchnorm_variants")
    assert raw["bn_axis1_no_center"]["axis"] == [1]
    assert layer(spec, "bn_axis1_no_center").config["axis"] == 1
    assert layer(spec, "bn_two_axes").config["axis"] == [1, 3]
    assert layer(spec, "bn_two_axes").weights[0].shape == (1, 3, 1, 5)
    renorm = layer(spec, "bn_renorm")
    stored = npz_weights(data, "bn_renorm")
    assert len(stored) == 7 and renorm.config["renorm"] is True
    # gamma, beta, moving_mean, moving_variance; moving_stddev/renorm_mean/renorm_stddev dropped
    assert_weights_equal(renorm.weights, stored[:4], "bn_renorm")
    for name in ("bn_two_axes", "bn_axis1_no_center", "bn_no_scale", "ln_two_axes"):
        assert_weights_equal(layer(spec, name).weights, npz_weights(data, name), name)


def test_keras2_embedding_input_length_and_int_input():
    spec = read_model(keras2_path("embedding_input_length.h5"))
    assert "input_length" in _raw_layer_configs("embedding_input_length")["embed"]
    assert "input_length" not in layer(spec, "embed").config
    assert spec.input_dtypes == ["int32"] and spec.input_shapes == [[None, 4]]


def test_keras2_leaky_relu_alpha_and_thresholded_relu():
    spec = read_model(keras2_path("merge_and_activations.h5"))
    assert layer(spec, "leaky").config["negative_slope"] == pytest.approx(0.15)
    assert "alpha" not in layer(spec, "leaky").config
    assert layer(spec, "thresholded").config["theta"] == pytest.approx(0.4)
    assert layer(spec, "relu_all").config["threshold"] == pytest.approx(0.25)


def test_keras2_spatial_dropout_noise_shape_dropped_and_dropout_keeps_its_own():
    raw = _raw_layer_configs("core_and_preprocessing")
    assert "noise_shape" in raw["spatial_drop"]
    spec = read_model(keras2_path("core_and_preprocessing.h5"))
    assert "noise_shape" not in layer(spec, "spatial_drop").config
    assert layer(spec, "drop_noise_shape").config["noise_shape"] == [None, 1, 5]


def test_keras2_later_call_arguments_arrive_as_keyword_tensors():
    """Keras 2 serialises every argument after the first by name: mha(q, v) -> value=v."""
    spec = read_model(keras2_path("attention_layers.h5"))
    mha = layer(spec, "mha").inbound_nodes[0]
    assert mha.args == [TensorRef("query", 0, 0)]
    assert mha.kwargs == {"value": TensorRef("value", 0, 0)}
    causal = layer(spec, "mha_causal").inbound_nodes[0]
    assert causal.kwargs == {"value": TensorRef("query", 0, 0), "use_causal_mask": True}
    assert layer(spec, "mha").config["value_shape"] == [None, 5, 6]
    assert layer(spec, "dot_attention").inbound_nodes[0].args == [
        [TensorRef("query", 0, 0), TensorRef("value", 0, 0)]]


def test_keras2_hdf5_file_named_keras():
    path = keras2_path("hdf5_named_keras.keras")
    spec = read_model(path)
    assert spec.keras_major == 2 and spec.source == path
    assert_weights_equal(layer(spec, "dense").weights, npz_weights(npz("hdf5_named_keras"), "dense"),
                         "dense")


def test_keras2_weights_only_file_is_not_a_model():
    with pytest.raises(ModelFileError, match="only weights") as err:
        read_model(keras2_path("json_model.weights.h5"))
    assert keras2_path("json_model.weights.h5") in str(err.value)


# ============================================================================ Keras 3 files

@pytest.fixture(scope="module")
def keras():
    import keras as keras_module   # a test extra: its absence is an install error, not a skip
    return keras_module


def randomize(model, seed=0):
    """Random values everywhere, so a misplaced bias or moving statistic is visible."""
    rng = np.random.default_rng(seed)
    for var in model.weights:
        value = rng.uniform(-1, 1, var.shape)
        if "variance" in var.path:
            value = np.abs(value) + 0.5
        var.assign(value.astype(var.dtype))
    return model


def save_both(model, tmp_path, stem="model"):
    paths = [str(tmp_path / f"{stem}.keras"), str(tmp_path / f"{stem}.h5")]
    for p in paths:
        model.save(p)
    return paths


def check_functional_graph(spec, model) -> None:
    """The spec's graph equals model.get_config()'s (Keras 3 node indices are already ours)."""
    config = json.loads(model.to_json())["config"]
    assert [l.name for l in spec.layers] == [e["name"] for e in config["layers"]]
    for entry in config["layers"]:
        spec_layer = layer(spec, entry["name"])
        assert spec_layer.class_name == entry["class_name"]
        assert node_refs(spec_layer) == keras3_config_histories(entry)


def sequential_model(keras):
    L = keras.layers
    return randomize(keras.Sequential([
        keras.Input((6,)), L.Dense(5, activation="relu", name="d1"),
        L.BatchNormalization(name="bn"), L.Dropout(0.1), L.Dense(3, activation="softmax")],
        name="seq"))


def test_keras3_sequential(keras, tmp_path):
    model = sequential_model(keras)
    for path in save_both(model, tmp_path):
        spec = read_model(path)
        assert spec.keras_major == 3 and spec.kind == "Sequential" and spec.source == path
        assert [l.class_name for l in spec.layers] == [
            "InputLayer", "Dense", "BatchNormalization", "Dropout", "Dense"]
        assert spec.input_shapes == [[None, 6]] and spec.input_dtypes == ["float32"]
        assert layer(spec, "d1").config["dtype"] == "float32"          # DTypePolicy -> name
        assert layer(spec, "d1").config["activation"] == "relu"
        assert_spec_weights_match_keras(spec, model)


def test_keras3_functional_inputs_outputs_shared_layer_and_ops(keras, tmp_path):
    L = keras.layers
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    shared = L.Dense(4, name="shared")
    sa, sb = shared(a), shared(b)
    plus = sa + 3.0
    prod = keras.ops.multiply(plus, sb)
    cat = L.Concatenate(name="cat")([prod, sa])
    out1 = L.Dense(2, activation="hard_sigmoid", name="out1")(cat)
    out2 = L.Add(name="merge_add")([sa, sb])
    model = randomize(keras.Model([a, b], [out1, out2], name="multi"))
    for path in save_both(model, tmp_path):
        spec = read_model(path)
        check_functional_graph(spec, model)
        assert spec.inputs == [TensorRef("a", 0, 0), TensorRef("b", 0, 0)]
        assert spec.outputs == [TensorRef("out1", 0, 0), TensorRef("merge_add", 0, 0)]
        assert spec.input_shapes == [[None, 4], [None, 4]]
        assert node_refs(layer(spec, "shared")) == [[("a", 0, 0)], [("b", 0, 0)]]
        ops = [l for l in spec.layers if l.module and l.module.startswith("keras.src.ops")]
        assert [l.class_name for l in ops] == ["Add", "Multiply"]
        add_op = ops[0]
        assert add_op.inbound_nodes[0].args == [TensorRef("shared", 0, 0), 3.0]
        assert ops[1].inbound_nodes[0].args == [TensorRef(add_op.name, 0, 0),
                                                TensorRef("shared", 1, 0)]
        merge = layer(spec, "merge_add")          # the layer Add is no op node
        assert not (merge.module or "").startswith("keras.src.ops")
        assert merge.inbound_nodes[0].args == [[TensorRef("shared", 0, 0),
                                                TensorRef("shared", 1, 0)]]
        assert layer(spec, "out1").config["activation"] == "hard_sigmoid"
        assert_spec_weights_match_keras(spec, model)


def test_keras3_sequential_in_functional_in_sequential(keras, tmp_path):
    L = keras.layers
    innermost = keras.Sequential([keras.Input((5,)), L.Dense(4, name="in_d"),
                                  L.BatchNormalization(name="in_bn"), L.Dense(3, name="in_d2")],
                                 name="innermost")
    x = keras.Input((5,), name="fx")
    middle = keras.Model(x, L.Dense(2, name="mid_d")(innermost(x)), name="middle")
    model = randomize(keras.Sequential([keras.Input((5,)), L.Dense(5, name="pre"), middle,
                                        L.Dense(1, name="post")], name="outer"))
    for path in save_both(model, tmp_path):
        spec = read_model(path)
        mid = layer(spec, "middle")
        assert mid.class_name == "Functional" and mid.inner.kind == "Functional"
        inner = layer(spec, "middle/innermost")
        assert inner.class_name == "Sequential" and inner.inner.kind == "Sequential"
        assert node_refs(inner) == [[("fx", 0, 0)]]
        assert mid.inner.outputs == [TensorRef("mid_d", 0, 0)]
        assert_spec_weights_match_keras(spec, model)


def test_keras3_nested_functional_called_twice(keras, tmp_path):
    """Keras 3 counts a nested Functional's built-in call in output_layers only."""
    L = keras.layers
    fi = keras.Input((3,), name="fi")
    block = keras.Model(fi, L.Dense(2, name="f1")(fi), name="block")
    x = keras.Input((3,), name="x")
    first, second = block(x), block(L.Dense(3, name="pre")(x))
    y = L.Add(name="add")([L.Dense(2, name="post")(first), second])
    model = randomize(keras.Model(x, [y, second], name="top"))
    assert model.get_config()["output_layers"][1] == ["block", 2, 0]
    for path in save_both(model, tmp_path):
        spec = read_model(path)
        check_functional_graph(spec, model)
        assert spec.outputs == [TensorRef("add", 0, 0), TensorRef("block", 1, 0)]
        assert node_refs(layer(spec, "post")) == [[("block", 0, 0)]]
        assert_spec_weights_match_keras(spec, model)


def test_keras3_layers_with_sublayers_keep_get_weights_order(keras, tmp_path):
    L = keras.layers
    x = keras.Input((4, 6), name="x")
    y = L.Bidirectional(L.LSTM(3, return_sequences=True), name="bi")(x)
    y = L.TimeDistributed(L.BatchNormalization(), name="td_bn")(y)
    y = L.MultiHeadAttention(2, 3, name="mha")(y, y)
    y = L.RNN(L.StackedRNNCells([L.LSTMCell(2), L.GRUCell(3)]), return_sequences=True,
              name="stacked")(y)
    y = L.Bidirectional(L.GRU(2), backward_layer=L.GRU(2, go_backwards=True), name="bi2")(y)
    model = randomize(keras.Model(x, y))
    for path in save_both(model, tmp_path):
        spec = read_model(path)
        assert len(layer(spec, "bi").weights) == 6
        assert layer(spec, "bi").config["layer"]["config"]["dtype"] == "float32"
        assert_spec_weights_match_keras(spec, model)


def test_keras3_dict_outputs(keras, tmp_path):
    L = keras.layers
    x = keras.Input((3,), name="x")
    model = keras.Model(x, {"score": L.Dense(1, name="s")(x), "logits": L.Dense(2, name="l")(x)})
    spec = read_model(save_both(model, tmp_path)[0])
    assert spec.output_keys == ["logits", "score"]
    assert spec.outputs == [TensorRef("l", 0, 0), TensorRef("s", 0, 0)]


def test_keras3_to_json_and_weights_files(keras, tmp_path):
    model = sequential_model(keras)
    weights = str(tmp_path / "w.weights.h5")
    model.save_weights(weights)
    spec = read_architecture_json(model.to_json())
    assert spec.keras_major == 3 and spec.source == "<json>"
    assert all(l.weights == [] for l in spec.layers)
    load_weights_into(spec, weights)
    assert_spec_weights_match_keras(spec, model)


def test_hdf5_named_keras_and_zip_named_h5_are_read_by_content(keras, tmp_path):
    model = sequential_model(keras)
    keras_path, h5_path = save_both(model, tmp_path)
    swapped_h5 = str(tmp_path / "really_hdf5.keras")
    swapped_zip = str(tmp_path / "really_zip.h5")
    shutil.copyfile(h5_path, swapped_h5)
    shutil.copyfile(keras_path, swapped_zip)
    for path in (swapped_h5, swapped_zip):
        assert_spec_weights_match_keras(read_model(path), model)


def test_bfloat16_weights_are_widened_to_float32(keras, tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, dtype="bfloat16")])
    randomize(model)
    path = str(tmp_path / "bf16.keras")
    model.save(path)
    spec = read_model(path)
    dense = spec.layers[1]
    assert dense.config["dtype"] == "bfloat16"
    for got, want in zip(dense.weights, model.layers[0].get_weights()):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, np.asarray(want, dtype=np.float32))


# ============================================================================ Lambda layers

def test_lambda_config_is_data_and_nothing_runs(keras, tmp_path, monkeypatch):
    marker = tmp_path / "lambda_ran"
    L = keras.layers
    x = keras.Input((2,), name="x")
    # The function leaves a marker file whenever it runs (Keras runs it once while building).
    y = L.Lambda(lambda t, p=str(marker): (open(p, "w").close(), t)[1], name="lam")(x)
    model = keras.Model(x, L.Dense(1, name="d")(y))
    paths = save_both(model, tmp_path)
    marker.unlink()

    def refuse(*args, **kwargs):
        raise AssertionError("read_model tried to unmarshal/unpickle/eval something")
    for target, name in ((marshal, "loads"), (pickle, "loads"), (pickle, "load"),
                         (builtins, "eval"), (builtins, "exec")):
        monkeypatch.setattr(target, name, refuse)
    for path in paths:
        spec = read_model(path)
        lam = layer(spec, "lam")
        assert lam.class_name == "Lambda"
        assert lam.config["function"]["class_name"] == "__lambda__"
        assert isinstance(lam.config["function"]["config"]["code"], str)   # still base64 text
        assert node_refs(lam) == [[("x", 0, 0)]]
    monkeypatch.undo()
    assert not marker.exists()


# ============================================================================ damaged files

def assert_file_error(path, match=None):
    with pytest.raises(ModelFileError, match=match) as err:
        read_model(path)
    assert str(path) in str(err.value)
    return err.value


def test_random_bytes_file(tmp_path):
    path = tmp_path / "noise.keras"
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    assert_file_error(path, "not a Keras model file")


def test_text_file_named_keras(tmp_path):
    path = tmp_path / "notes.keras"
    path.write_text("this is not a model\n")
    assert_file_error(path, "not a Keras model file")


def test_missing_file_and_directory(tmp_path):
    assert_file_error(tmp_path / "absent.h5", "cannot read")
    assert_file_error(tmp_path, "directory")


def test_truncated_files(tmp_path):
    model_bytes = {
        "keras2.h5": open(keras2_path("cnn_functional.h5"), "rb").read(),
    }
    for name, data in model_bytes.items():
        for cut in (len(data) // 2, len(data) - 100, 600):
            path = tmp_path / f"cut{cut}_{name}"
            path.write_bytes(data[:cut])
            assert_file_error(path)


def test_truncated_keras3_files(keras, tmp_path):
    for path in save_both(sequential_model(keras), tmp_path, "whole"):
        data = open(path, "rb").read()
        for cut in (len(data) // 2, len(data) - 40):
            cut_path = tmp_path / f"cut{cut}_{os.path.basename(path)}"
            cut_path.write_bytes(data[:cut])
            assert_file_error(cut_path)


def test_h5_config_without_weights(tmp_path):
    path = tmp_path / "no_weights.h5"
    with edited_keras2_copy("cnn_functional.h5", path) as f:
        del f["model_weights"]
    assert_file_error(path, "no 'model_weights'")


def test_h5_missing_layer_group_names_the_layer(tmp_path):
    path = tmp_path / "no_conv.h5"
    with edited_keras2_copy("cnn_functional.h5", path) as f:
        del f["model_weights/conv"]
    assert_file_error(path, "'conv'")


def test_h5_layer_name_list_without_the_layer_names_it(tmp_path):
    path = tmp_path / "unlisted.h5"
    with edited_keras2_copy("cnn_functional.h5", path) as f:
        group = f["model_weights"]
        names = [n for n in group.attrs["layer_names"] if n not in (b"conv", "conv")]
        group.attrs["layer_names"] = names
    assert_file_error(path, "no weights group for layer 'conv'")


def test_h5_weight_count_mismatch_names_the_layer(tmp_path):
    path = tmp_path / "short.h5"
    with edited_keras2_copy("cnn_functional.h5", path) as f:
        group = f["model_weights/classes"]
        group.attrs["weight_names"] = group.attrs["weight_names"][:1]
    assert_file_error(path, r"'classes' \(Dense\) has 1 weight array")


def test_h5_config_that_is_not_json(tmp_path):
    path = tmp_path / "bad_config.h5"
    with edited_keras2_copy("cnn_functional.h5", path) as f:
        f.attrs["model_config"] = "{not json"
    assert_file_error(path, "not valid JSON")


def test_hdf5_without_keras_content(tmp_path):
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f["data"] = np.arange(3)
    assert_file_error(path, "without a Keras model config")


def test_keras_zip_without_config(tmp_path):
    path = tmp_path / "empty.keras"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("readme.txt", "hello")
    assert_file_error(path, "config.json")


def test_keras_zip_missing_layer_group_names_the_layer(keras, tmp_path):
    src = save_both(sequential_model(keras), tmp_path)[0]
    dst = str(tmp_path / "broken.keras")
    rewrite_keras_zip(src, dst, lambda f: f.__delitem__("layers/batch_normalization"))
    err = assert_file_error(dst, "'bn'")
    assert "layers/batch_normalization" in str(err)


def test_keras_zip_weight_count_mismatch(keras, tmp_path):
    src = save_both(sequential_model(keras), tmp_path)[0]
    dst = str(tmp_path / "short.keras")
    rewrite_keras_zip(src, dst, lambda f: f.__delitem__("layers/dense/vars/1"))
    assert_file_error(dst, r"'d1' \(Dense\) has 1 weight array")


def test_keras_zip_groups_swapped_between_layers(keras, tmp_path):
    src = save_both(sequential_model(keras), tmp_path)[0]
    dst = str(tmp_path / "swapped.keras")

    def swap(f):
        f.move("layers/dense", "layers/tmp")
        f.move("layers/dense_1", "layers/dense")
        f.move("layers/tmp", "layers/dense_1")
    rewrite_keras_zip(src, dst, swap)
    assert_file_error(dst, "belongs to layer")


def test_never_built_model_says_so(keras, tmp_path):
    path = str(tmp_path / "unbuilt.keras")
    keras.Sequential([keras.layers.Dense(2, name="d")]).save(path)
    assert_file_error(path, "saved before it was built")


def test_byte_string_attributes_of_old_writers(tmp_path):
    """Older h5py/Keras wrote model_config, keras_version and name lists as byte strings."""
    path = tmp_path / "bytes.h5"
    with edited_keras2_copy("nested_sequential.h5", path) as f:
        for key in ("model_config", "keras_version", "backend"):
            f.attrs[key] = np.bytes_(f.attrs[key].encode("utf-8"))
        groups = [f["model_weights"]] + [f["model_weights"][n] for n in f["model_weights"]]
        for group in groups:
            for key in ("layer_names", "weight_names"):
                if key in group.attrs:
                    values = [v.encode() if isinstance(v, str) else v for v in group.attrs[key]]
                    group.attrs[key] = np.array(values, dtype="S") if values else np.zeros(0)
        assert f["model_weights"].attrs["layer_names"].dtype.kind == "S"
    spec = read_model(path)
    data = npz("nested_sequential")
    assert spec.keras_major == 2
    assert_weights_equal(layer(spec, "block/inner_bn").weights,
                         npz_weights(data, "block/inner_bn"), "inner_bn")


def test_weights_file_that_does_not_fit_the_architecture(tmp_path):
    spec = read_architecture_json(keras2_path("json_model.json"))
    with pytest.raises(ModelFileError, match="does not have") as err:
        load_weights_into(spec, keras2_path("cnn_functional.h5"))
    assert keras2_path("cnn_functional.h5") in str(err.value)


def test_architecture_json_errors(tmp_path):
    with pytest.raises(ModelFileError, match="not valid JSON"):
        read_architecture_json("{oops")
    with pytest.raises(ModelFileError, match="not a Sequential or Functional"):
        read_architecture_json('{"class_name": "Dense", "config": {"units": 2}}')
    with pytest.raises(ModelFileError, match="refers to layer 'ghost'"):
        read_architecture_json(json.dumps({
            "class_name": "Functional", "keras_version": "2.15.0",
            "config": {"name": "m", "layers": [
                {"class_name": "InputLayer", "name": "x", "inbound_nodes": [],
                 "config": {"name": "x", "batch_input_shape": [None, 2]}},
                {"class_name": "Dense", "name": "d", "inbound_nodes": [[["ghost", 0, 0, {}]]],
                 "config": {"name": "d", "units": 1}}],
                "input_layers": [["x", 0, 0]], "output_layers": [["d", 0, 0]]}}))
    with pytest.raises(ModelFileError, match="Keras 1"):
        read_architecture_json('{"class_name": "Sequential", "keras_version": "1.2.2", '
                               '"config": []}')


# ============================================================================ Keras.js files

KERASJS_CASES_FILE = os.path.join(KERASJS_DIR, "cases.jsonl")


def test_kerasjs_keras3_legacy_h5_files():
    """Every Keras.js case file (Keras 3 legacy HDF5) reads, with its inputs' shapes and its
    weights equal to the case's `weights` (model.get_weights() order)."""
    def all_weights(spec):
        out = []
        for l in spec.layers:
            out += all_weights(l.inner) if l.inner is not None else l.weights
        return out

    with open(KERASJS_CASES_FILE) as f:
        cases = [json.loads(line) for line in f]
    failures = []
    for case in cases:
        try:
            spec = read_model(os.path.join(KERASJS_DIR, case["h5"]))
            assert spec.keras_major == 3 and spec.inputs and spec.outputs
            # stateful RNN cases fix the batch size in their batch_shape
            assert [s[1:] for s in spec.input_shapes] == [i["shape"][1:] for i in case["inputs"]]
            assert all(s[0] in (None, i["shape"][0])
                       for s, i in zip(spec.input_shapes, case["inputs"]))
            got = all_weights(spec)
            assert len(got) == len(case["weights"]), "weight count"
            for g, w in zip(got, case["weights"]):
                np.testing.assert_allclose(g, np.reshape(w["data"], w["shape"]), atol=1e-6)
        except (AssertionError, ModelFileError) as exc:
            failures.append(f"{case['id']}: {str(exc)[:200]}")
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures)


# ============================================================================ per-class rules
def test_what_reading_a_file_asks_is_answered_by_the_layer_classes():
    """saving/ asks by class name (saving/layer_rules.py); the answers are the layer classes'
    declarations (kerasgl/layers: weight_count, normalize_keras2_config, inference_weights)."""
    from kerasgl.layers import LAYER_CLASSES
    from kerasgl.saving import layer_rules
    for name, cls in LAYER_CLASSES.items():
        assert layer_rules.rules_for(name).source is cls, name
    count = layer_rules.expected_weight_count
    assert count("Dense", {"use_bias": False}) == 1 and count("Conv2D", {}) == 2
    assert count("Dense", {"lora_rank": 4}) is None            # options that add arrays
    lstm = {"class_name": "LSTM", "config": {"use_bias": False}}
    assert count("Bidirectional", {"layer": lstm}) == 4 and count("TimeDistributed", {"layer": lstm}) == 2
    assert count("LayerNormalization", {}) is None              # not fixed: the layer checks
    assert count("Lambda", {}) == 0 and count("NoSuchLayer", {}) is None
    assert layer_rules.rules_for("GRUCell").normalize_keras2_config({}) == {"reset_after": False}
    assert layer_rules.rules_for("NoSuchLayer").normalize_keras2_config({"alpha": 1}) == {"alpha": 1}
