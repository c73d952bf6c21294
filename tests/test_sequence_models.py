"""Whole sequence models against live Keras 3, each within 1e-4: an encoder-decoder LSTM with
initial states, a bidirectional LSTM text classifier over a masked embedding, a GRU forecaster."""
import numpy as np

from keras_ref import assert_matches_keras, keras

L = keras.layers


def test_encoder_decoder_lstm_with_initial_states(tmp_path):
    source = keras.Input((7, 5), name="source")
    target = keras.Input((6, 4), name="target")
    _, h, c = L.LSTM(16, return_state=True, name="encoder")(source)
    decoded = L.LSTM(16, return_sequences=True, name="decoder")(target, initial_state=[h, c])
    outputs = L.TimeDistributed(L.Dense(4, activation="softmax"), name="project")(decoded)
    model = keras.Model([source, target], outputs, name="seq2seq")
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, (3, 7, 5)).astype("float32"),
              rng.uniform(-1, 1, (3, 6, 4)).astype("float32")]
    assert_matches_keras(model, tmp_path, inputs=inputs)


def test_bidirectional_lstm_text_classifier_over_masked_embedding(tmp_path):
    model = keras.Sequential([
        keras.Input((12,), dtype="int32"),
        L.Embedding(50, 8, mask_zero=True),
        L.Bidirectional(L.LSTM(12, return_sequences=True)),
        L.Bidirectional(L.LSTM(6)),
        L.Dense(8, activation="relu"),
        L.Dense(3, activation="softmax"),
    ], name="text_classifier")
    tokens = np.random.default_rng(1).integers(1, 50, size=(5, 12)).astype("int32")
    for row, length in enumerate([12, 9, 4, 1, 7]):
        tokens[row, length:] = 0           # right-padded sentences of different lengths
    assert_matches_keras(model, tmp_path, inputs=[tokens])


def test_gru_forecaster(tmp_path):
    model = keras.Sequential([
        keras.Input((24, 2)),
        L.GRU(32, return_sequences=True),
        L.GRU(16),
        L.Dense(8, activation="tanh"),
        L.Dense(1),
    ], name="forecaster")
    t = np.arange(24, dtype="float32")
    series = np.stack([np.stack([np.sin(t / 3 + p), np.cos(t / 5 + p)], -1) for p in range(4)])
    assert_matches_keras(model, tmp_path, inputs=[series.astype("float32")])
