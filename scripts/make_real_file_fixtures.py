"""Write the fixtures of tests/test_real_files.py into tests/data/real_files/: small models laid
out as the Keras files people have are laid out.

Run under TensorFlow + tf-keras (not the project venv, which has Keras 3 only), e.g.:

    python3 -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install tensorflow-cpu tf-keras h5py
    /tmp/tfvenv/bin/python scripts/make_real_file_fixtures.py

Each `<name>.npz` holds `input_0` (what was fed) and `output_0` (what tf-keras' predict returned
for the model as tf-keras saved it). The files:

- teachable_machine_like.h5: saved by tf-keras as is. The layout of Teachable Machine's
  keras_model.h5 (Keras 2.4): a Sequential holding a Sequential that holds a Functional model
  (a tiny MobileNetV2-like one, here), then a Sequential head. Keras 2 names the Functional's
  weights `Conv1/kernel:0` in the outer group, without the inner model's name.
- windows_keras215.keras: saved by tf-keras as a .keras zip, then REWRITTEN by this script as
  Keras 2.15 on Windows wrote the weights file: its groups named with backslashes
  (`layers\\conv1d\\vars`), since that Keras built the paths with os.path.join.
- tf1_config.h5: saved by tf-keras, then its model_config REWRITTEN as tf.keras 1.x wrote
  configs: numbers it held as numpy values (ReLU's max_value, LeakyReLU's alpha) written as
  {"type": "ndarray", "value": ...}.
- tf_op_layers.h5: saved by tf-keras as is: TensorFlow functions called on Keras tensors
  (TFOpLambda layers: operators, math.*, nn.*, reshape, transpose, concat, matmul...).
The script checks that tf-keras still predicts the same from each file it can reload.
"""
from __future__ import annotations

import io
import json
import os
import zipfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import tf_keras as keras  # noqa: E402
from tf_keras import layers  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "real_files")
RNG = np.random.default_rng(2024)


def randomize(model) -> None:
    """Every weight random (BatchNorm variances positive), so a wrong assignment shows."""
    for w in model.weights:
        value = RNG.uniform(-1, 1, w.shape).astype("float32")
        if "variance" in w.name:
            value = np.abs(value) + 0.5
        w.assign(value)


def save_expected(model, name: str, x: np.ndarray) -> np.ndarray:
    y = model.predict(x, verbose=0)
    np.savez_compressed(os.path.join(OUT, f"{name}.npz"), input_0=x, output_0=y)
    return y


def check_reload(path: str, x, y) -> None:
    again = keras.models.load_model(path, compile=False).predict(x, verbose=0)
    np.testing.assert_allclose(again, y, rtol=1e-5, atol=1e-5)


def teachable_machine_like() -> None:
    image = keras.Input((16, 16, 3))
    x = layers.Conv2D(8, 3, strides=2, padding="same", use_bias=False, name="Conv1")(image)
    x = layers.BatchNormalization(name="bn_Conv1")(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    x = layers.DepthwiseConv2D(3, padding="same", use_bias=False, name="expanded_conv_depthwise")(x)
    x = layers.BatchNormalization(name="expanded_conv_depthwise_BN")(x)
    x = layers.ReLU(6.0, name="expanded_conv_depthwise_relu")(x)
    x = layers.GlobalAveragePooling2D(name="global_average_pooling2d_GlobalAveragePooling2D1")(x)
    mobilenet = keras.Model(image, x, name="mobilenetv2_tiny")
    body = keras.Sequential([keras.Input((16, 16, 3)), mobilenet], name="sequential_1")
    head = keras.Sequential([keras.Input((8,)), layers.Dense(6, activation="relu", name="dense_Dense1"),
                             layers.Dense(3, activation="softmax", name="dense_Dense2")],
                            name="sequential_2")
    model = keras.Sequential([keras.Input((16, 16, 3)), body, head], name="sequential_3")
    randomize(model)
    x = RNG.uniform(-1, 1, (2, 16, 16, 3)).astype("float32")
    y = save_expected(model, "teachable_machine_like", x)
    path = os.path.join(OUT, "teachable_machine_like.h5")
    model.save(path, include_optimizer=False)
    check_reload(path, x, y)
    with h5py.File(path) as f:
        names = [n.decode() if isinstance(n, bytes) else n
                 for n in f["model_weights/sequential_1"].attrs["weight_names"]]
    assert names[0] == "Conv1/kernel:0", names      # the layout this fixture is for


def windows_keras215() -> None:
    sequence = keras.Input((10, 3))
    x = layers.Conv1D(4, 3, activation="relu", name="conv1d")(sequence)
    x = keras.Sequential([keras.Input((8, 4)), layers.Dense(5, activation="tanh"), layers.Dense(2)],
                         name="sequential")(x)
    model = keras.Model(sequence, layers.Flatten()(x), name="windows")
    randomize(model)
    x = RNG.uniform(-1, 1, (2, 10, 3)).astype("float32")
    y = save_expected(model, "windows_keras215", x)
    path = os.path.join(OUT, "windows_keras215.keras")
    model.save(path)
    check_reload(path, x, y)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["model.weights.h5"] = _backslash_paths(members["model.weights.h5"])
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _backslash_paths(data: bytes) -> bytes:
    """Each `.../vars` group re-made at the root under its path joined with backslashes."""
    source, target = h5py.File(io.BytesIO(data), "r"), io.BytesIO()
    with h5py.File(target, "w") as out:
        def visit(name, node):
            if isinstance(node, h5py.Group) and name.split("/")[-1] == "vars":
                owner = name.split("/")[:-1]
                group = out.require_group("\\".join(owner)).require_group("vars") if owner \
                    else out.require_group("vars")
                for key, dataset in node.items():
                    group.create_dataset(key, data=dataset[()])
                for key, value in node.attrs.items():
                    group.attrs[key] = value
        source.visititems(visit)
    source.close()
    return target.getvalue()


def tf1_config() -> None:
    model = keras.Sequential([keras.Input((6,)), layers.Dense(5), layers.ReLU(max_value=0.8),
                              layers.Dense(4), layers.LeakyReLU(alpha=0.2), layers.Dense(2)],
                             name="tf1")
    randomize(model)
    x = RNG.uniform(-1, 1, (3, 6)).astype("float32")
    y = save_expected(model, "tf1_config", x)
    path = os.path.join(OUT, "tf1_config.h5")
    model.save(path, include_optimizer=False)
    with h5py.File(path, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        for layer in config["config"]["layers"]:
            for key in ("max_value", "alpha"):
                if key in layer["config"]:
                    layer["config"][key] = {"type": "ndarray", "value": layer["config"][key]}
        f.attrs["model_config"] = json.dumps(config)


def tf_op_layers() -> None:
    """TensorFlow functions called on Keras tensors: tf-keras records TFOpLambda layers."""
    import tensorflow as tf
    a, b = keras.Input((4, 6)), keras.Input((4, 6))
    x = tf.nn.relu(a * b + 1.0)
    x = tf.math.subtract(tf.math.maximum(x, 0.25), b / 2.0)
    x = tf.clip_by_value(tf.math.tanh(x) - tf.math.exp(b * 0.1), -0.8, 0.9)
    w = tf.matmul(x, tf.transpose(x, perm=[0, 2, 1]))              # (batch, 4, 4)
    y = tf.concat([tf.nn.softmax(w, axis=-1), tf.math.reduce_mean(x, axis=-1, keepdims=True)], -1)
    y = tf.reshape(tf.expand_dims(y, -1), (-1, 4 * 5))
    y = tf.math.reduce_sum(tf.squeeze(tf.expand_dims(y, 1), axis=1), axis=-1) + tf.math.reduce_max(
        tf.math.sigmoid(a), axis=[1, 2])
    model = keras.Model([a, b], y, name="tf_ops")
    xs = [RNG.uniform(-1, 1, (3, 4, 6)).astype("float32") for _ in range(2)]
    out = model.predict(xs, verbose=0)
    np.savez_compressed(os.path.join(OUT, "tf_op_layers.npz"), input_0=xs[0], input_1=xs[1],
                        output_0=out)
    path = os.path.join(OUT, "tf_op_layers.h5")
    model.save(path, include_optimizer=False)
    check_reload(path, xs, out)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    teachable_machine_like()
    windows_keras215()
    tf1_config()
    tf_op_layers()
    print("wrote", sorted(os.listdir(OUT)))
