"""Bidirectional and TimeDistributed against live Keras 3 (.keras and .h5)."""
import os

import numpy as np
import pytest

import kerasgl as kg
from keras_ref import assert_close, assert_matches_keras, keras, randomize_weights

L = keras.layers


def _model(layer, shape=(6, 3)):
    inputs = keras.Input(shape)
    outputs = layer(inputs)
    return keras.Model(inputs, list(outputs) if isinstance(outputs, (list, tuple)) else outputs)


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "ave", "mul", None])
@pytest.mark.parametrize("inner", ["lstm_seq", "gru_last"])
def test_bidirectional_merge_modes(tmp_path, merge_mode, inner):
    layer = L.LSTM(4, return_sequences=True) if inner == "lstm_seq" else L.GRU(3)
    assert_matches_keras(_model(L.Bidirectional(layer, merge_mode=merge_mode)), tmp_path)


@pytest.mark.parametrize("merge_mode", ["concat", None])
def test_bidirectional_return_state(tmp_path, merge_mode):
    layer = L.Bidirectional(L.LSTM(3, return_sequences=True, return_state=True), merge_mode=merge_mode)
    assert_matches_keras(_model(layer), tmp_path)


@pytest.mark.parametrize("merge_mode", ["sum", "ave", "mul", "concat", None])
def test_bidirectional_return_state_every_merge_mode_and_cell(tmp_path, merge_mode):
    """LSTM, GRU and SimpleRNN with return_state in one model per merge mode (a masked input,
    sequences and last steps): every output and every forward/backward state compared."""
    inputs = keras.Input((6, 3))
    masked = L.Masking(0.0)(inputs)
    outputs = []
    for layer in (L.LSTM(4, return_sequences=True, return_state=True),
                  L.GRU(3, return_state=True),
                  L.SimpleRNN(5, return_sequences=True, return_state=True)):
        outputs += list(L.Bidirectional(layer, merge_mode=merge_mode)(masked))
    model = keras.Model(inputs, outputs)
    x = np.random.default_rng(2).uniform(-1, 1, (3, 6, 3)).astype("float32")
    x[0, 3:] = 0.0
    x[1, :2] = 0.0
    expected = assert_matches_keras(model, tmp_path, inputs=[x])
    states = 4 + 2 + 2
    assert len(expected) == states + (6 if merge_mode is None else 3)


def test_bidirectional_custom_backward_layer_and_initial_states(tmp_path):
    seq = keras.Input((5, 2))
    states = [keras.Input((3,)) for _ in range(2)]
    layer = L.Bidirectional(L.GRU(3, return_sequences=True),
                            backward_layer=L.GRU(3, return_sequences=True, go_backwards=True,
                                                 activation="relu"))
    model = keras.Model([seq] + states, layer(seq, initial_state=states))
    assert_matches_keras(model, tmp_path, formats=(".keras",))


def test_bidirectional_stateful_carries_and_resets(tmp_path):
    model = keras.Sequential([keras.Input((4, 2), batch_size=2),
                              L.Bidirectional(L.SimpleRNN(3, stateful=True))])
    randomize_weights(model)
    x = np.random.default_rng(0).uniform(-1, 1, (2, 4, 2)).astype("float32")
    path = os.path.join(tmp_path, "bidi_stateful.keras")
    model.save(path)
    first = np.asarray(model(x))
    second = np.asarray(model(x))
    with kg.load_model(path) as loaded:
        assert_close(loaded.predict(x, verbose=0), first)
        assert_close(loaded.predict(x, verbose=0), second)
        loaded.reset_states()
        assert_close(loaded.predict(x, verbose=0), first)


@pytest.mark.parametrize("inner, shape", [
    (lambda: L.Dense(4, activation="relu"), (5, 3)),
    (lambda: L.Conv2D(2, 3, padding="same"), (3, 6, 6, 2)),
    (lambda: L.Flatten(), (3, 2, 2)),
    (lambda: L.BatchNormalization(), (4, 3)),
    (lambda: L.MaxPooling1D(2), (3, 4, 2)),
    (lambda: L.Conv1D(3, 3, padding="causal", dilation_rate=2), (3, 9, 2)),
    (lambda: L.SeparableConv2D(3, 3, depth_multiplier=2, padding="same"), (2, 6, 6, 2)),
    (lambda: L.DepthwiseConv2D(3, strides=2), (2, 7, 7, 3)),
    (lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same"), (2, 4, 4, 3)),
    (lambda: L.MaxPooling2D(2), (3, 6, 6, 2)),
    (lambda: L.GlobalAveragePooling2D(), (3, 5, 5, 2)),
    (lambda: L.Conv2D(3, 3, data_format="channels_first"), (2, 2, 6, 5)),
], ids=["dense", "conv2d", "flatten", "batchnorm", "maxpool1d", "conv1d-causal-dilated",
        "separableconv2d", "depthwiseconv2d", "conv2dtranspose", "maxpool2d", "gap2d",
        "conv2d-channels-first"])
def test_time_distributed(tmp_path, inner, shape):
    assert_matches_keras(_model(L.TimeDistributed(inner()), shape), tmp_path)


def test_unknown_wrapped_layer_is_refused(tmp_path):
    # A file whose wrapped layer class kerasgl does not know: refused at load, the class named.
    model = _model(L.TimeDistributed(L.Dense(2)))
    path = os.path.join(tmp_path, "td.keras")
    model.save(path)
    import json
    import zipfile
    with zipfile.ZipFile(path) as archive:
        files = {n: archive.read(n) for n in archive.namelist()}
    config = json.loads(files["config.json"])
    config["config"]["layers"][1]["config"]["layer"]["class_name"] = "NoSuchLayer"
    files["config.json"] = json.dumps(config).encode()
    bad = os.path.join(tmp_path, "td_bad.keras")
    with zipfile.ZipFile(bad, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    with pytest.raises(kg.UnsupportedLayerError, match="NoSuchLayer"):
        kg.load_model(bad)
