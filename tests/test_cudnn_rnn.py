"""CuDNNLSTM / CuDNNGRU from Keras 2 files, against Keras 3's LSTM / GRU(reset_after=True).

tests/data/cudnn/cudnn_rnn.h5 is written by scripts/make_cudnn_fixtures.py from plain-layer
weights by Keras 2's own conversion to the CuDNN layout (tf-keras cannot build CuDNN layers
without a CUDA GPU). Keras 2 runs such a file as the plain layers with the plain weights, tanh
and sigmoid: the reference here is Keras 3 running exactly that, with the plain weights the script
started from (tests/data/cudnn/plain_weights.npz). kerasgl reads the CuDNN file and converts back."""
import os
import shutil

import h5py
import numpy as np
import pytest
from keras_ref import assert_close, keras

import kerasgl as kg

DATA = os.path.join(os.path.dirname(__file__), "data", "cudnn")
FILE = os.path.join(DATA, "cudnn_rnn.h5")
L = keras.layers


def reference_model():
    """The file's graph with plain Keras 3 layers: Input(5, 3) -> LSTM(4, sequences and states)
    -> GRU(3); outputs [gru, lstm state h, lstm state c], as the file lists them."""
    plain = np.load(os.path.join(DATA, "plain_weights.npz"))
    seq = keras.Input((5, 3), name="seq")
    lstm = L.LSTM(4, return_sequences=True, return_state=True, recurrent_activation="sigmoid",
                  name="lstm_hs")
    gru = L.GRU(3, reset_after=True, recurrent_activation="sigmoid", name="gru_v1")
    sequence, h, c = lstm(seq)
    model = keras.Model(seq, [gru(sequence), h, c])
    lstm.set_weights([plain[f"lstm_hs_{i}"] for i in range(3)])
    gru.set_weights([plain[f"gru_v1_{i}"] for i in range(3)])
    return model


def test_cudnn_layers_match_keras():
    x = np.random.default_rng(3).uniform(-1, 1, (4, 5, 3)).astype(np.float32)
    expected = reference_model().predict(x, verbose=0)
    with kg.load_model(FILE) as model:
        assert [layer.class_name for layer in model.layers][1:] == ["CuDNNLSTM", "CuDNNGRU"]
        actual = model.predict(x, verbose=0)
    assert len(actual) == 3
    for a, e, what in zip(actual, expected, ("gru", "lstm state h", "lstm state c")):
        assert_close(a, e, what=f"cudnn_rnn.h5 {what}")


def test_a_cudnn_bias_of_the_plain_layers_shape_is_refused(tmp_path):
    """A CuDNN layer's bias holds both sets (8 * units for an LSTM): a plain LSTM's is refused,
    naming the file and the layer."""
    path = os.path.join(str(tmp_path), "cudnn_short_bias.h5")
    shutil.copy(FILE, path)
    with h5py.File(path, "r+") as f:
        group = f["model_weights"]["lstm_hs"]
        name = "lstm_hs/bias:0"
        bias = np.asarray(group[name])
        del group[name]
        group.create_dataset(name, data=bias[:16])
    with pytest.raises(kg.ModelFileError, match="lstm_hs") as caught:
        kg.load_model(path)
    assert path in str(caught.value)
