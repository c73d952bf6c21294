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
The tests read only these files (no TensorFlow at test time): tests/test_saving.py checks the
ModelSpecs, tests/test_keras2_files.py checks kerasgl's predict against output_*.
`python scripts/make_keras2_fixtures.py NAME ...` rewrites only the named fixtures (each is seeded
from its own name, so one fixture alone comes out the same as in a full run).

Most fixtures are files that Keras 3 (3.15) itself refuses to load, each for a Keras 2 quirk:
  legacy_sequential_list, legacy_sequential_dict_cnn  Sequential without an InputLayer
  rnn_time_major, lstm_keras2_defaults, masked_sequences, bidirectional_wrappers,
  rnn_wrappers                                 `time_major` in LSTM/GRU/SimpleRNN configs
  conv_groups_and_transpose, conv_pool_1d/_2d, time_distributed_wrappers
                                               `groups` on Depthwise/Separable/Transposed convs
  hdf5_named_keras.keras                       an HDF5 file named .keras
  batchnorm_variants                           BatchNormalization over two axes (and renorm)
  merge_and_activations                        ThresholdedReLU (removed in Keras 3)
  core_and_preprocessing                       SpatialDropout1D with noise_shape
  attention_layers                             MultiHeadAttention's query/key/value_shape keys
  upsampling_other_interpolations              interpolation="area"
  nested_sequential, chunked_attrs             Keras 2's node indices of nested models
and hard_sigmoid.h5 loads in Keras 3 but gives other outputs (Keras 3 changed the formula).

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
import zlib

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
    """Sequential MLP whose first layer carries batch_input_shape (tf-keras 2.21 also writes an
    InputLayer; legacy_sequential_list removes it)."""
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


# ------------------------------------------------------------------------------------------------
# Keras 2 files that Keras 3 itself refuses, and Keras 2 layer semantics.
# Every model below has all of its weights randomised (biases and BatchNormalization statistics
# included), so a weight read in the wrong order or a dropped bias shows in the outputs.
# ------------------------------------------------------------------------------------------------

def randomize_all(model, low: float = -0.5, high: float = 0.5) -> None:
    """Every weight uniform in [low, high); variances positive; adapted Normalization kept."""
    kept = {id(v) for layer in model.layers if isinstance(layer, layers.Normalization)
            for v in layer.weights}
    for var in model.weights:
        if id(var) in kept:
            continue
        name = var.name
        value = RNG.uniform(low, high, var.shape).astype("float32")
        if any(key in name for key in ("moving_variance", "moving_stddev", "renorm_stddev")):
            value = np.abs(value) + 0.5
        var.assign(value)


def rewrite_config(path: str, rewrite) -> None:
    """Apply rewrite(model_config dict) -> dict to an .h5 file's model_config attribute."""
    with h5py.File(path, "r+") as f:
        f.attrs["model_config"] = json.dumps(rewrite(json.loads(f.attrs["model_config"])))


def legacy_sequential_dict_cnn():
    """A channels_last CNN as Keras 2.2 - 2.12 saved a Sequential built with `input_shape`: a
    dict config ("name", "layers") with NO InputLayer and `batch_input_shape` on the first layer.
    tf-keras 2.21 always writes the InputLayer, so the file is tf-keras' save with that entry
    removed (HONESTLY REWRITTEN); tf-keras reloads the rewritten file with the same outputs."""
    model = keras.Sequential([
        layers.Conv2D(4, 3, padding="same", activation="relu", batch_input_shape=(None, 8, 8, 2),
                      data_format="channels_last", name="conv1"),
        layers.BatchNormalization(name="bn1"),
        layers.MaxPooling2D(2, name="pool1"),
        layers.Conv2D(6, 3, strides=1, padding="valid", activation="relu", name="conv2"),
        layers.GlobalAveragePooling2D(name="gap"),
        layers.Dense(3, activation="softmax", name="probs"),
    ], name="cnn_k2")
    randomize_all(model)
    save_fixture(model, "legacy_sequential_dict_cnn")
    path = os.path.join(OUT, "legacy_sequential_dict_cnn.h5")

    def drop_input_layer(config):
        entries = config["config"]["layers"]
        assert entries[0]["class_name"] == "InputLayer"
        assert entries[1]["config"]["batch_input_shape"] == [None, 8, 8, 2]
        config["config"]["layers"] = entries[1:]
        return config
    rewrite_config(path, drop_input_layer)
    data = np.load(os.path.join(OUT, "legacy_sequential_dict_cnn.npz"))
    check_reload(path, [data["input_0"]], [data["output_0"]])


def rnn_time_major():
    """time_major=True on LSTM, GRU and SimpleRNN (Keras 3 has no such option and refuses the
    file). The model's "batch" axis 0 is really time: inputs are (time, batch, features)."""
    x = keras.Input((3, 4), name="steps_batch_features")            # (time=None, batch=3, 4)
    seq = layers.LSTM(5, time_major=True, return_sequences=True, name="lstm_tm")(x)
    gru = layers.GRU(3, time_major=True, return_sequences=True, reset_after=False,
                     name="gru_tm")(seq)
    last = layers.SimpleRNN(2, time_major=True, go_backwards=True, name="rnn_tm_last")(seq)
    head = layers.Dense(2, name="head")(gru)
    model = keras.Model(x, [head, last], name="time_major")
    randomize_all(model)
    save_fixture(model, "rnn_time_major", [RNG.normal(0, 1, (6, 3, 4)).astype("float32")])


def lstm_keras2_defaults():
    """Keras 2's old defaults written out: recurrent_activation hard_sigmoid (Keras 2's formula
    0.2x + 0.5 inside the recurrence), GRU reset_after=False, unroll=True, LSTM return_state."""
    x = keras.Input((5, 3), name="seq")
    seq, h, c = layers.LSTM(4, recurrent_activation="hard_sigmoid", return_sequences=True,
                            return_state=True, name="lstm_hs")(x)
    g = layers.GRU(3, recurrent_activation="hard_sigmoid", reset_after=False, unroll=True,
                   name="gru_v1")(seq)
    model = keras.Model(x, [g, h, c], name="keras2_defaults")
    randomize_all(model, -1.0, 1.0)
    save_fixture(model, "lstm_keras2_defaults", [RNG.normal(0, 2, (2, 5, 3)).astype("float32")])


def bidirectional_wrappers():
    """Bidirectional whose inner configs carry Keras 2-only keys (time_major), a custom
    backward_layer, and every merge mode Keras 2 had."""
    x = keras.Input((6, 3), name="seq")
    a = layers.Bidirectional(layers.LSTM(3, return_sequences=True), merge_mode="concat",
                             name="bi_concat")(x)
    b = layers.Bidirectional(
        layers.GRU(3, return_sequences=True),
        backward_layer=layers.GRU(3, return_sequences=True, go_backwards=True, reset_after=False),
        merge_mode="sum", name="bi_sum_custom_backward")(a)
    c = layers.Bidirectional(layers.SimpleRNN(2), merge_mode="mul", name="bi_mul")(b)
    d = layers.Bidirectional(layers.LSTM(2), merge_mode="ave", name="bi_ave")(a)
    e = layers.Bidirectional(layers.GRU(2, return_sequences=True), merge_mode=None,
                             name="bi_none")(b)
    model = keras.Model(x, [c, d] + list(e), name="bidirectional_k2")
    randomize_all(model)
    save_fixture(model, "bidirectional_wrappers")


def time_distributed_wrappers():
    """TimeDistributed around layers whose Keras 2 configs Keras 3 rejects (DepthwiseConv2D and
    Conv2DTranspose carry `groups`) and around Dense / pooling / Flatten."""
    x = keras.Input((3, 6, 6, 2), name="clips")
    y = layers.TimeDistributed(layers.Conv2D(3, 3, padding="same", activation="relu"),
                               name="td_conv")(x)
    y = layers.TimeDistributed(layers.DepthwiseConv2D(3, depth_multiplier=2), name="td_dw")(y)
    y = layers.TimeDistributed(layers.Conv2DTranspose(2, 2, strides=2), name="td_convT")(y)
    y = layers.TimeDistributed(layers.MaxPooling2D(2), name="td_pool")(y)
    y = layers.TimeDistributed(layers.Flatten(), name="td_flat")(y)
    y = layers.TimeDistributed(layers.Dense(4, activation="tanh"), name="td_dense")(y)
    model = keras.Model(x, y, name="time_distributed_k2")
    randomize_all(model)
    save_fixture(model, "time_distributed_wrappers")


def conv_groups_and_transpose():
    """`groups` on DepthwiseConv2D / Conv2DTranspose configs (Keras 2 writes `groups: 1` there;
    Keras 3's classes have no such argument), tf-keras' Conv2DTranspose IGNORING groups=2 (its
    kernel is the full (k, k, filters, in) kernel and it runs an ungrouped transposed conv), and
    Keras 2's Conv2DTranspose output sizes with output_padding None (stride > kernel), set, and
    with dilation."""
    x = keras.Input((5, 5, 4), name="image")
    a = layers.DepthwiseConv2D(3, padding="same", depth_multiplier=1, name="dw")(x)
    b = layers.Conv2DTranspose(4, 3, groups=2, name="convT_groups2_ignored")(a)
    c = layers.Conv2DTranspose(3, 2, strides=3, padding="valid", name="convT_stride_gt_kernel")(a)
    d = layers.Conv2DTranspose(2, 3, strides=2, padding="same", output_padding=1,
                               name="convT_output_padding")(a)
    e = layers.Conv2DTranspose(2, 3, dilation_rate=2, padding="valid", name="convT_dilated")(a)
    f = layers.Conv2D(4, 3, groups=2, padding="same", name="conv_groups2")(x)
    model = keras.Model(x, [b, c, d, e, f], name="conv_groups")
    randomize_all(model)
    save_fixture(model, "conv_groups_and_transpose")
    assert model.get_layer("convT_groups2_ignored").kernel.shape == (3, 3, 4, 4)


def hdf5_named_keras():
    """An HDF5 model file named `.keras` (tf-keras `save_format="h5"` with a .keras name, as
    found in the wild); the format must come from the magic bytes, not the extension."""
    x = keras.Input((4,), name="x")
    y = layers.Dense(3, activation="elu", name="dense")(x)
    model = keras.Model(x, y, name="h5_named_keras")
    randomize_all(model)
    inputs = inputs_for(model)
    path = os.path.join(OUT, "hdf5_named_keras.keras")
    model.save(path, save_format="h5", include_optimizer=False)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89HDF\r\n\x1a\n"
    arrays = {"input_0": inputs[0], "output_0": model.predict(inputs[0], verbose=0)}
    arrays.update(weight_arrays(model))
    np.savez_compressed(os.path.join(OUT, "hdf5_named_keras.npz"), **arrays)
    check_reload(path, inputs, [arrays["output_0"]])


def conv_pool_2d():
    """Keras 2 2D conv / pooling / spatial layers (channels_last), including AveragePooling2D with
    padding="same" (TF averages over the valid cells only), bilinear UpSampling2D (TF's
    half-pixel resize) and a channels_first branch."""
    x = keras.Input((9, 9, 3), name="image")
    a = layers.Conv2D(4, 3, strides=2, padding="same", dilation_rate=1, activation="selu",
                      name="conv_s2")(x)
    b = layers.SeparableConv2D(5, 3, depth_multiplier=2, padding="same", dilation_rate=2,
                               activation="swish", name="sep")(x)
    b = layers.AveragePooling2D(3, strides=2, padding="same", name="avg_same")(b)
    c = layers.MaxPooling2D(3, strides=2, padding="same", name="max_same")(x)
    c = layers.ZeroPadding2D(((1, 0), (0, 2)), name="zpad")(c)
    c = layers.Cropping2D(((1, 1), (2, 0)), name="crop")(c)
    d = layers.UpSampling2D(2, interpolation="bilinear", name="up_bilinear")(a)
    d = layers.DepthwiseConv2D(3, strides=2, depth_multiplier=2, activation="hard_sigmoid",
                               name="dw_hs")(d)
    e = layers.UpSampling2D((2, 1), name="up_nearest")(a)
    f = layers.Permute((3, 1, 2), name="to_channels_first")(x)
    f = layers.Conv2D(2, 3, data_format="channels_first", name="conv_cf")(f)
    f = layers.MaxPooling2D(2, data_format="channels_first", name="pool_cf")(f)
    f = layers.Flatten(data_format="channels_first", name="flatten_cf")(f)
    g = layers.GlobalMaxPooling2D(name="gmax")(a)
    h = layers.GlobalAveragePooling2D(keepdims=True, name="gavg_keep")(b)
    model = keras.Model(x, [a, b, c, d, e, f, g, h], name="conv_pool_2d")
    randomize_all(model)
    save_fixture(model, "conv_pool_2d")


def conv_pool_1d():
    """Keras 2 1D layers: causal dilated Conv1D, SeparableConv1D, pooling, upsampling."""
    x = keras.Input((10, 3), name="seq")
    a = layers.Conv1D(4, 3, padding="causal", dilation_rate=2, activation="relu",
                      name="causal")(x)
    b = layers.SeparableConv1D(3, 3, padding="same", depth_multiplier=2, name="sep1d")(a)
    b = layers.AveragePooling1D(3, strides=2, padding="same", name="avg1d_same")(b)
    c = layers.MaxPooling1D(2, name="max1d")(a)
    c = layers.UpSampling1D(3, name="up1d")(c)
    c = layers.ZeroPadding1D((2, 1), name="zpad1d")(c)
    c = layers.Cropping1D((1, 3), name="crop1d")(c)
    d = layers.GlobalMaxPooling1D(name="gmax1d")(b)
    e = layers.GlobalAveragePooling1D(name="gavg1d")(c)
    model = keras.Model(x, [b, c, d, e], name="conv_pool_1d")
    randomize_all(model)
    save_fixture(model, "conv_pool_1d")


KERAS2_ACTIVATIONS = ("relu", "elu", "selu", "softplus", "softsign", "swish", "gelu", "mish",
                      "tanh", "sigmoid", "hard_sigmoid", "exponential", "linear", "softmax")


def merge_and_activations():
    """Every tf-keras activation name (tf-keras has no relu6 / leaky_relu / silu names), the
    advanced-activation layers with Keras 2 config keys (LeakyReLU `alpha`, ReLU's threshold /
    negative_slope / max_value, ThresholdedReLU, removed in Keras 3), and the merge layers."""
    a = keras.Input((6,), name="a")
    b = keras.Input((6,), name="b")
    outs = [layers.Activation(name, name=f"act_{name}")(a) for name in KERAS2_ACTIVATIONS]
    outs += [
        layers.ReLU(max_value=1.5, negative_slope=0.1, threshold=0.25, name="relu_all")(a),
        layers.ReLU(max_value=6.0, name="relu6")(a),
        layers.ReLU(negative_slope=0.2, name="relu_leaky")(a),
        layers.LeakyReLU(alpha=0.15, name="leaky")(a),
        layers.ELU(alpha=0.7, name="elu_layer")(a),
        layers.ThresholdedReLU(theta=0.4, name="thresholded")(a),
        layers.PReLU(name="prelu")(a),
        layers.Softmax(name="softmax_layer")(a),
    ]
    outs += [
        layers.Add(name="add")([a, b]),
        layers.Subtract(name="subtract")([a, b]),
        layers.Multiply(name="multiply")([a, b]),
        layers.Average(name="average")([a, b]),
        layers.Maximum(name="maximum")([a, b]),
        layers.Minimum(name="minimum")([a, b]),
        layers.Dot(axes=1, normalize=True, name="dot_cos")([a, b]),
        layers.Dot(axes=1, name="dot")([a, b]),
    ]
    merged = layers.Concatenate(axis=-1, name="concat_all")(outs)
    seq = layers.Reshape((4, 3), name="as_seq")(layers.Concatenate(name="ab")([a, b]))
    soft_seq = layers.Softmax(axis=1, name="softmax_axis1")(seq)
    prelu_seq = layers.PReLU(shared_axes=[1], name="prelu_shared")(seq)
    model = keras.Model([a, b], [merged, soft_seq, prelu_seq], name="merge_activations")
    randomize_all(model)
    save_fixture(model, "merge_and_activations",
                 [RNG.normal(0, 2, (3, 6)).astype("float32") for _ in range(2)])


def batchnorm_variants():
    """Keras 2 BatchNormalization options Keras 3 lacks or writes differently: `axis` as a list
    (one element, and two axes: per-(row, channel) statistics of shape (1, H, 1, C)),
    channels_first axis=1, center/scale off, and renorm=True (three extra training-only weights;
    inference uses the moving statistics). LayerNormalization over two axes."""
    x = keras.Input((3, 4, 5), name="x")
    a = layers.BatchNormalization(axis=[1, 3], name="bn_two_axes")(x)
    b = layers.BatchNormalization(axis=1, center=False, name="bn_axis1_no_center")(x)
    c = layers.BatchNormalization(scale=False, epsilon=0.01, name="bn_no_scale")(x)
    d = layers.BatchNormalization(renorm=True, name="bn_renorm")(x)
    e = layers.LayerNormalization(axis=[2, 3], name="ln_two_axes")(x)
    model = keras.Model(x, [a, b, c, d, e], name="batchnorm_k2")
    randomize_all(model)
    assert len(model.get_layer("bn_renorm").get_weights()) == 7
    save_fixture(model, "batchnorm_variants")


def embedding_input_length():
    """Embedding with Keras 2's `input_length` (Keras 3 dropped it), then Flatten and Dense."""
    x = keras.Input((4,), name="tokens", dtype="int32")
    y = layers.Embedding(12, 3, input_length=4, name="embed")(x)
    y = layers.Flatten(name="flat")(y)
    y = layers.Dense(2, name="head")(y)
    model = keras.Model(x, y, name="embedding_k2")
    randomize_all(model)
    save_fixture(model, "embedding_input_length", [RNG.integers(0, 12, (3, 4)).astype("int32")])


def upsampling_other_interpolations():
    """tf-keras UpSampling2D also offers bicubic / area / lanczos / gaussian / mitchellcubic
    resizing. kerasgl must refuse what it does not implement, never fall back to nearest."""
    x = keras.Input((4, 4, 2), name="image")
    a = layers.UpSampling2D(2, interpolation="bicubic", name="up_bicubic")(x)
    b = layers.UpSampling2D(2, interpolation="area", name="up_area")(x)
    model = keras.Model(x, [a, b], name="upsampling_k2")
    save_fixture(model, "upsampling_other_interpolations")


def core_and_preprocessing():
    """Dense on a rank-3 input, RepeatVector / Permute / Reshape(-1), inference-identity layers
    with Keras 2 options (noise_shape, SpatialDropout1D, GaussianNoise, ActivityRegularization),
    Rescaling with offset, Normalization adapted (weights) and given mean/variance (config)."""
    x = keras.Input((4, 3), name="seq")
    y = layers.Dense(5, activation="softsign", name="dense_rank3")(x)
    y = layers.Dropout(0.5, noise_shape=(None, 1, 5), name="drop_noise_shape")(y)
    y = layers.SpatialDropout1D(0.3, name="spatial_drop")(y)
    y = layers.GaussianNoise(0.2, name="noise")(y)
    y = layers.ActivityRegularization(l1=0.01, name="act_reg")(y)
    y = layers.Permute((2, 1), name="permute")(y)
    y = layers.Reshape((-1,), name="reshape_flat")(y)
    y = layers.RepeatVector(2, name="repeat")(y)
    y = layers.Rescaling(0.5, offset=-0.25, name="rescale")(y)
    adapted = layers.Normalization(axis=-1, name="norm_adapted")
    adapted.adapt(RNG.normal(1.0, 3.0, (64, 2, 20)).astype("float32"))
    y = adapted(y)
    z = layers.Normalization(mean=[0.5, -1.0, 2.0], variance=[4.0, 0.25, 1.0],
                             name="norm_given")(x)
    model = keras.Model(x, [y, z], name="core_k2")
    randomize_all(model)
    save_fixture(model, "core_and_preprocessing")


def masked_sequences():
    """Keras 2 masking: Embedding(mask_zero=True) and Masking feeding RNNs and a mask-aware
    GlobalAveragePooling1D; inputs padded with zeros at the end (and in the middle)."""
    tokens = keras.Input((6,), name="tokens", dtype="int32")
    e = layers.Embedding(10, 4, mask_zero=True, name="embed_masked")(tokens)
    a = layers.LSTM(3, return_sequences=True, name="lstm_masked")(e)
    a = layers.GlobalAveragePooling1D(name="gavg_masked")(a)
    feats = keras.Input((6, 3), name="feats")
    m = layers.Masking(mask_value=0.0, name="masking")(feats)
    b = layers.GRU(2, name="gru_masked")(m)
    model = keras.Model([tokens, feats], [a, b], name="masked_k2")
    randomize_all(model)
    ids = RNG.integers(1, 10, (3, 6)).astype("int32")
    ids[0, 4:] = 0
    ids[1, 2] = 0
    values = RNG.normal(0, 1, (3, 6, 3)).astype("float32")
    values[0, 3:] = 0.0
    values[2, 1] = 0.0
    save_fixture(model, "masked_sequences", [ids, values])


def attention_layers():
    """Keras 2 attention configs: MultiHeadAttention (einsum kernels), Attention with use_scale
    and score_mode, AdditiveAttention, each with a causal mask given in the call."""
    q = keras.Input((4, 6), name="query")
    v = keras.Input((5, 6), name="value")
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")(q, v)
    att = layers.Attention(use_scale=True, name="dot_attention")([q, v])
    add = layers.AdditiveAttention(name="additive_attention")([q, v])
    self_att = layers.MultiHeadAttention(num_heads=2, key_dim=2, value_dim=3,
                                         name="mha_causal")(q, q, use_causal_mask=True)
    model = keras.Model([q, v], [mha, att, add, self_att], name="attention_k2")
    randomize_all(model)
    save_fixture(model, "attention_layers")


def main(argv: list[str]) -> int:
    """Write every fixture, or only those named on the command line."""
    os.makedirs(OUT, exist_ok=True)
    for make in (mlp_sequential, legacy_sequential_list, cnn_functional, two_inputs_shared,
                 nested_sequential, hard_sigmoid, chunked_attrs, rnn_wrappers, tf_op_lambda,
                 json_and_weights, legacy_sequential_dict_cnn, rnn_time_major,
                 lstm_keras2_defaults, bidirectional_wrappers, time_distributed_wrappers,
                 conv_groups_and_transpose, hdf5_named_keras, conv_pool_2d, conv_pool_1d,
                 merge_and_activations, batchnorm_variants, embedding_input_length,
                 upsampling_other_interpolations, core_and_preprocessing, masked_sequences,
                 attention_layers):
        if argv and make.__name__ not in argv:
            continue
        # Seeded per fixture, so writing one fixture alone reproduces it exactly.
        global RNG
        seed = zlib.crc32(make.__name__.encode())
        RNG = np.random.default_rng(seed)
        keras.utils.set_random_seed(seed % 2**31)
        make()
        print(f"wrote {make.__name__}")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"tests/data/keras2: {total / 1024:.0f} KiB, tf {tf.__version__}, "
          f"tf_keras {keras.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
