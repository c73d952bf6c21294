"""Write the Keras 2 (tf.keras) fixtures in tests/data/keras2/.

Run under TensorFlow + tf-keras (not the project venv, which has Keras 3 only), e.g.:

    python3 -m venv /work/venv-tf
    /work/venv-tf/bin/pip install tensorflow-cpu tf-keras h5py
    /work/venv-tf/bin/python scripts/make_keras2_fixtures.py

Each model is saved with tf-keras' `model.save("<name>.h5")` (Keras 2 HDF5; two of them also as
tf-keras' `.keras` zip, whose config is in the Keras 2 dialect), next to
`<name>.npz` holding:
  input_0, input_1, ...     the inputs fed to model.predict (float32)
  output_0, output_1, ...   what Keras 2 computed for them (model.predict)
  weights/<layer>/<i>       layer.get_weights()[i]; layers of nested models as
                            weights/<nested model>/<layer>/<i>
The tests read only these files (no TensorFlow at test time); the numerical comparison of a
kerasgl model against output_* is left to the layer tests.

`legacy_sequential_list.h5` is `mlp_sequential.h5` with its model_config rewritten into the form
old Keras 2 (<= 2.2) wrote: a bare list of layers, no InputLayer, `batch_input_shape` on the first
layer. tf-keras itself no longer writes that form; the script checks that tf-keras still loads the
rewritten file and predicts the same outputs.
"""
from __future__ import annotations

import json
import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402
from tf_keras import layers  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "keras2")
RNG = np.random.default_rng(1234)


def randomize_batchnorm(model) -> None:
    """Give BatchNormalization non-trivial statistics so a wrong weight order shows."""
    for layer in model.layers:
        if hasattr(layer, "layers"):
            randomize_batchnorm(layer)
        elif isinstance(layer, layers.BatchNormalization):
            layer.set_weights([
                RNG.uniform(0.5, 1.5, w.shape).astype("float32") if i in (0, 3)
                else RNG.normal(0, 0.5, w.shape).astype("float32")
                for i, w in enumerate(layer.get_weights())])


def weight_arrays(model, prefix: str = "weights") -> dict[str, np.ndarray]:
    out = {}
    for layer in model.layers:
        if hasattr(layer, "layers") and isinstance(layer, keras.Model):
            out.update(weight_arrays(layer, f"{prefix}/{layer.name}"))
            continue
        for i, w in enumerate(layer.get_weights()):
            out[f"{prefix}/{layer.name}/{i}"] = np.asarray(w)
    return out


def inputs_for(model, batch: int = 2, scale: float = 1.0) -> list[np.ndarray]:
    return [(RNG.normal(0, scale, (batch,) + tuple(t.shape[1:]))).astype("float32")
            for t in model.inputs]


def as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def save_fixture(model, name: str, inputs: list[np.ndarray] | None = None,
                 keras_zip_too: bool = False) -> None:
    """<name>.h5 + <name>.npz; with keras_zip_too also <name>.keras (tf.keras' zip format)."""
    inputs = inputs if inputs is not None else inputs_for(model)
    outputs = as_list(model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0))
    model.save(os.path.join(OUT, f"{name}.h5"), include_optimizer=False)
    if keras_zip_too:
        model.save(os.path.join(OUT, f"{name}.keras"))
        check_reload(os.path.join(OUT, f"{name}.keras"), inputs, outputs)
    arrays = {f"input_{i}": x for i, x in enumerate(inputs)}
    arrays.update({f"output_{i}": np.asarray(y) for i, y in enumerate(outputs)})
    arrays.update(weight_arrays(model))
    np.savez_compressed(os.path.join(OUT, f"{name}.npz"), **arrays)
    check_reload(os.path.join(OUT, f"{name}.h5"), inputs, outputs)


def check_reload(path: str, inputs, outputs) -> None:
    reloaded = keras.models.load_model(path, compile=False)
    again = as_list(reloaded.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0))
    for a, b in zip(outputs, again):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def mlp_sequential():
    """Sequential MLP whose first layer carries batch_input_shape (no explicit InputLayer)."""
    model = keras.Sequential([
        layers.Dense(8, activation="relu", batch_input_shape=(None, 4), name="hidden"),
        layers.Dropout(0.25, name="drop"),
        layers.Dense(3, activation="softmax", name="probs"),
    ], name="mlp")
    save_fixture(model, "mlp_sequential")


def legacy_sequential_list():
    """mlp_sequential.h5 rewritten to the Keras <= 2.2 Sequential config (see module doc)."""
    src, dst = os.path.join(OUT, "mlp_sequential.h5"), os.path.join(OUT, "legacy_sequential_list.h5")
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        entries = [e for e in config["config"]["layers"] if e["class_name"] != "InputLayer"]
        assert "batch_input_shape" in entries[0]["config"]
        f.attrs["model_config"] = json.dumps({"class_name": "Sequential", "config": entries})
    shutil.copyfile(os.path.join(OUT, "mlp_sequential.npz"),
                    os.path.join(OUT, "legacy_sequential_list.npz"))
    data = np.load(os.path.join(OUT, "legacy_sequential_list.npz"))
    check_reload(dst, [data["input_0"]], [data["output_0"]])


def cnn_functional():
    x = keras.Input((8, 8, 3), name="image")
    y = layers.Conv2D(4, 3, padding="same", activation="relu", name="conv")(x)
    y = layers.BatchNormalization(name="bn")(y)
    y = layers.MaxPooling2D(2, name="pool")(y)
    y = layers.Flatten(name="flat")(y)
    y = layers.Dense(5, activation="softmax", name="classes")(y)
    model = keras.Model(x, y, name="cnn")
    randomize_batchnorm(model)
    save_fixture(model, "cnn_functional")


def two_inputs_shared():
    """Two inputs, two outputs, one Dense layer called on both inputs."""
    a = keras.Input((5,), name="in_a")
    b = keras.Input((5,), name="in_b")
    shared = layers.Dense(4, activation="tanh", name="shared")
    ha, hb = shared(a), shared(b)
    merged = layers.Concatenate(name="merge")([ha, hb])
    out_sum = layers.Dense(2, name="head_sum")(merged)
    out_diff = layers.Subtract(name="head_diff")([ha, hb])
    model = keras.Model([a, b], [out_sum, out_diff], name="siamese")
    save_fixture(model, "two_inputs_shared")


def nested_sequential():
    """A Sequential (with BatchNormalization) inside a functional model, called twice."""
    inner = keras.Sequential([
        layers.Dense(5, input_shape=(6,), name="inner_dense"),
        layers.BatchNormalization(name="inner_bn"),
        layers.Dense(4, activation="relu", name="inner_out"),
    ], name="block")
    x = keras.Input((6,), name="x")
    first = inner(x)
    second = inner(layers.Dense(6, name="pre")(x))
    y = layers.Add(name="sum")([first, second])
    y = layers.Dense(2, name="head")(y)
    model = keras.Model(x, y, name="outer")
    randomize_batchnorm(model)
    save_fixture(model, "nested_sequential", keras_zip_too=True)


def hard_sigmoid():
    """Keras 2's hard_sigmoid is clip(0.2 x + 0.5, 0, 1) (Keras 3 changed it)."""
    x = keras.Input((6,), name="x")
    dense = layers.Dense(6, activation="hard_sigmoid", name="dense_hs")(x)
    act = layers.Activation("hard_sigmoid", name="act_hs")(x)
    model = keras.Model(x, [dense, act], name="hard_sigmoid")
    inputs = [np.linspace(-4, 4, 12, dtype="float32").reshape(2, 6)]
    save_fixture(model, "hard_sigmoid", inputs)
    data = np.load(os.path.join(OUT, "hard_sigmoid.npz"))
    np.testing.assert_allclose(data["output_1"], np.clip(0.2 * inputs[0] + 0.5, 0, 1), atol=1e-6)


def chunked_attrs():
    """Names long enough that Keras splits the `layer_names` and `weight_names` attributes into
    numbered chunks (HDF5 caps an attribute header at 64 KiB). Keras stores a name list as a
    fixed-width array padded to its longest name, so one long name among many short ones is
    enough, and keeps the file small."""
    long = "x" * 1600
    inner = keras.Sequential([layers.Dense(1, input_shape=(1,), name=f"d{i}" + (long if i == 0 else ""))
                              for i in range(24)], name="deep_block")
    x = keras.Input((1,), name="x")
    y = inner(x)
    for i in range(44):
        y = layers.Activation("linear", name=f"a{i}" + (long if i == 0 else ""))(y)
    model = keras.Model(x, y, name="chunky")
    save_fixture(model, "chunked_attrs")
    with h5py.File(os.path.join(OUT, "chunked_attrs.h5")) as f:
        assert "layer_names0" in f["model_weights"].attrs, "layer_names was not chunked"
        assert "weight_names0" in f["model_weights/deep_block"].attrs, "weight_names not chunked"


def rnn_wrappers():
    """Bidirectional(LSTM), TimeDistributed(Dense), GRU (tf.keras default reset_after=True)."""
    x = keras.Input((5, 3), name="seq")
    y = layers.Bidirectional(layers.LSTM(4, return_sequences=True), name="bilstm")(x)
    y = layers.TimeDistributed(layers.Dense(2), name="per_step")(y)
    y = layers.GRU(3, name="gru")(y)
    y = layers.Dense(1, name="out")(y)
    model = keras.Model(x, y, name="rnn")
    save_fixture(model, "rnn_wrappers", keras_zip_too=True)


def tf_op_lambda():
    """Arithmetic on symbolic tensors: tf.keras records it as TFOpLambda layers."""
    x = keras.Input((3,), name="x")
    y = layers.Dense(3, name="dense")(x)
    y = y * 2.0 + 1.0
    model = keras.Model(x, y, name="ops")
    save_fixture(model, "tf_op_lambda")


def json_and_weights():
    """model.to_json() + model.save_weights("....h5"): architecture and weights apart."""
    inner_in = keras.Input((4,), name="inner_in")
    inner_out = layers.BatchNormalization(name="inner_bn")(layers.Dense(4, name="inner_dense")(inner_in))
    inner = keras.Model(inner_in, inner_out, name="inner_model")
    x = keras.Input((4,), name="x")
    y = layers.Dense(2, activation="sigmoid", name="head")(inner(x))
    model = keras.Model(x, y, name="json_model")
    randomize_batchnorm(model)
    inputs = inputs_for(model)
    with open(os.path.join(OUT, "json_model.json"), "w") as f:
        f.write(model.to_json())
    model.save_weights(os.path.join(OUT, "json_model.weights.h5"))
    arrays = {"input_0": inputs[0], "output_0": model.predict(inputs[0], verbose=0)}
    arrays.update(weight_arrays(model))
    np.savez_compressed(os.path.join(OUT, "json_model.npz"), **arrays)
    rebuilt = keras.models.model_from_json(open(os.path.join(OUT, "json_model.json")).read())
    rebuilt.load_weights(os.path.join(OUT, "json_model.weights.h5"))
    np.testing.assert_allclose(rebuilt.predict(inputs[0], verbose=0), arrays["output_0"], atol=1e-6)


def main() -> int:
    os.makedirs(OUT, exist_ok=True)
    keras.utils.set_random_seed(7)
    for make in (mlp_sequential, legacy_sequential_list, cnn_functional, two_inputs_shared,
                 nested_sequential, hard_sigmoid, chunked_attrs, rnn_wrappers, tf_op_lambda,
                 json_and_weights):
        make()
        print(f"wrote {make.__name__}")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"tests/data/keras2: {total / 1024:.0f} KiB, tf {tf.__version__}, "
          f"tf_keras {keras.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
