"""The Keras files people really have, as tf-keras wrote them (scripts/make_real_file_fixtures.py
made tests/data/real_files/; each `<name>.npz` holds tf-keras' inputs and outputs):

- teachable_machine_like.h5, saved by tf-keras as is: Teachable Machine's layout (a Sequential
  holding a Sequential that holds a Functional model, whose weights are named without it).
- windows_keras215.keras: a tf-keras .keras zip REWRITTEN with its weights groups named with
  backslashes, as Keras 2.15 on Windows wrote them.
- tf1_config.h5: a tf-keras .h5 whose config was REWRITTEN with numbers in tf.keras 1.x's
  {"type": "ndarray", "value": ...} form.
Plus Keras 3's own .h5 of a model nested the same way (its names also omit the inner model)."""
import json
import os
import shutil

import h5py
import numpy as np
import pytest

from keras_ref import assert_close, assert_matches_keras, keras

import kerasgl as kg
from kerasgl import saving

DATA = os.path.join(os.path.dirname(__file__), "data", "real_files")
ATOL = RTOL = 1e-4


def _predict_matches_tf_keras(filename: str) -> None:
    data = np.load(os.path.join(DATA, filename.rsplit(".", 1)[0] + ".npz"))
    with kg.load_model(os.path.join(DATA, filename)) as model:
        actual = model.predict(data["input_0"], verbose=0)
    assert_close(actual, data["output_0"], ATOL, RTOL, what=filename)


def test_teachable_machine_layout():
    path = os.path.join(DATA, "teachable_machine_like.h5")
    with h5py.File(path) as f:     # the layout this fixture is for
        names = [n.decode() if isinstance(n, bytes) else n
                 for n in f["model_weights/sequential_1"].attrs["weight_names"]]
    assert names[0] == "Conv1/kernel:0" and not any("mobilenetv2_tiny" in n for n in names)
    _predict_matches_tf_keras("teachable_machine_like.h5")


def test_teachable_machine_weights_reach_the_innermost_layers():
    spec = saving.read_model(os.path.join(DATA, "teachable_machine_like.h5"))
    body = next(layer for layer in spec.layers if layer.name == "sequential_1").inner
    mobilenet = next(layer for layer in body.layers if layer.inner is not None).inner
    by_name = {layer.name: layer for layer in mobilenet.layers}
    assert [w.shape for w in by_name["Conv1"].weights] == [(3, 3, 3, 8)]
    assert len(by_name["bn_Conv1"].weights) == 4
    assert len(by_name["expanded_conv_depthwise_BN"].weights) == 4


def test_keras3_h5_of_a_functional_inside_a_sequential(tmp_path):
    L = keras.layers
    image = keras.Input((8, 8, 3))
    x = L.BatchNormalization(name="bn_Conv1")(L.Conv2D(4, 3, name="Conv1")(image))
    x = L.GlobalAveragePooling2D()(L.ReLU(6.0)(x))
    inner = keras.Model(image, x, name="tiny_net")
    model = keras.Sequential([keras.Input((8, 8, 3)), keras.Sequential([inner], name="body"),
                              keras.Sequential([L.Dense(5), L.Dense(2)], name="head")],
                             name="outer")
    assert_matches_keras(model, tmp_path, formats=(".h5", ".keras"))


def test_windows_backslash_weight_paths():
    _predict_matches_tf_keras("windows_keras215.keras")


def test_tf1_ndarray_numbers_in_config():
    spec = saving.read_model(os.path.join(DATA, "tf1_config.h5"))
    relu = next(layer for layer in spec.layers if layer.class_name == "ReLU")
    assert relu.config["max_value"] == pytest.approx(0.8)
    _predict_matches_tf_keras("tf1_config.h5")



def test_tf1_nan_for_none_runs_uncapped_as_tf1_did(tmp_path):
    """tf.keras 1.x saved ReLU(max_value=None) as {"type": "ndarray", "value": NaN} (it had cast
    None to floatx) and TensorFlow 1.x's relu ran without a cap. The fixture rewritten that way
    must give what Keras gives for the same network with no cap (its weights read from the file)."""
    path = str(tmp_path / "tf1_nan_cap.h5")
    shutil.copy(os.path.join(DATA, "tf1_config.h5"), path)
    with h5py.File(path, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        relu = next(l for l in config["config"]["layers"] if l["class_name"] == "ReLU")
        relu["config"]["max_value"] = {"type": "ndarray", "value": float("nan")}
        f.attrs["model_config"] = json.dumps(config)          # json writes NaN as tf.keras did
    spec = saving.read_model(path)
    assert next(l for l in spec.layers if l.class_name == "ReLU").config["max_value"] is None
    dense = [l.weights for l in spec.layers if l.class_name == "Dense"]
    reference = keras.Sequential([
        keras.Input((6,)), keras.layers.Dense(5), keras.layers.ReLU(),
        keras.layers.Dense(4), keras.layers.LeakyReLU(negative_slope=0.2), keras.layers.Dense(2)])
    for layer, weights in zip([l for l in reference.layers if l.weights], dense):
        layer.set_weights(weights)
    x = np.load(os.path.join(DATA, "tf1_config.npz"))["input_0"]
    with kg.load_model(path) as model:
        actual = model.predict(x, verbose=0)
    assert np.isfinite(actual).all()
    assert_close(actual, np.asarray(reference.predict(x, verbose=0)), ATOL, RTOL)

# Options later Keras 2 releases added, absent from the configs older ones wrote (Keras 2.0-2.2):
# kerasgl must read them as their defaults.
LATER_OPTIONS = {"ReLU": ("negative_slope", "threshold"), "Conv2D": ("groups",),
                 "DepthwiseConv2D": ("dilation_rate", "depthwise_initializer"),
                 "BatchNormalization": ("renorm", "renorm_clipping", "renorm_momentum",
                                        "fused", "virtual_batch_size", "adjustment")}


def _without_later_options(layers: list, first: bool = True) -> None:
    for index, layer in enumerate(layers):
        config = layer["config"]
        if layer["class_name"] in ("Sequential", "Functional", "Model"):
            _without_later_options(config["layers"], False)
            continue
        for key in LATER_OPTIONS.get(layer["class_name"], ()):
            config.pop(key, None)
        if not (first and index == 0) and layer["class_name"] != "InputLayer":
            config.pop("dtype", None)          # Keras 2.0 wrote dtype on input layers only


@pytest.mark.parametrize("name", ["tf1_config", "teachable_machine_like"])
def test_configs_without_later_keras2_options(tmp_path, name):
    """The fixture's config REWRITTEN here without the options later Keras 2 releases added."""
    path = str(tmp_path / f"{name}.h5")
    shutil.copy(os.path.join(DATA, f"{name}.h5"), path)
    with h5py.File(path, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        _without_later_options(config["config"]["layers"])
        f.attrs["model_config"] = json.dumps(config)
    data = np.load(os.path.join(DATA, f"{name}.npz"))
    with kg.load_model(path) as model:
        actual = model.predict(data["input_0"], verbose=0)
    assert_close(actual, data["output_0"], ATOL, RTOL)


def test_tf_op_layers_run_without_tensorflow():
    data = np.load(os.path.join(DATA, "tf_op_layers.npz"))
    with kg.load_model(os.path.join(DATA, "tf_op_layers.h5")) as model:
        actual = model.predict([data["input_0"], data["input_1"]], verbose=0)
    assert_close(actual, data["output_0"], ATOL, RTOL)


def test_other_tf_ops_are_refused_by_name(tmp_path):
    """The fixture REWRITTEN here: one of its TFOpLambda layers made tf.math.cumsum."""
    path = str(tmp_path / "cumsum.h5")
    shutil.copy(os.path.join(DATA, "tf_op_layers.h5"), path)
    with h5py.File(path, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        layer = next(l for l in config["config"]["layers"] if l["class_name"] == "TFOpLambda")
        layer["config"]["function"] = "math.cumsum"
        f.attrs["model_config"] = json.dumps(config)
    with pytest.raises(kg.UnsupportedLayerError, match=r"tf\.math\.cumsum"):
        kg.load_model(path)
