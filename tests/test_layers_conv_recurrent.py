"""ConvLSTM1D / ConvLSTM2D / ConvLSTM3D against Keras 3 (.keras and .h5): sequences and last
outputs, states, go_backwards, padding, strides, dilation, no bias, other activations; masks
refused at load."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg

L = keras.layers


def sequences(shape, seed=1):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


@pytest.mark.parametrize("options", [
    dict(),
    dict(return_sequences=True),
    dict(return_sequences=True, go_backwards=True, padding="same"),
    dict(strides=2, padding="valid"),
    dict(dilation_rate=2, padding="same", use_bias=False),
    dict(activation="relu", recurrent_activation="hard_sigmoid", return_sequences=True),
], ids=["last", "sequences", "backwards_same", "strides", "dilation_nobias", "activations"])
def test_conv_lstm_2d(options, tmp_path):
    model = keras.Sequential([keras.Input((4, 7, 6, 3)), L.ConvLSTM2D(5, 3, **options)],
                             name="conv_lstm_2d")
    assert_matches_keras(model, tmp_path, inputs=[sequences((2, 4, 7, 6, 3))], seed=2)


def test_conv_lstm_2d_states_and_a_following_layer(tmp_path):
    x = keras.Input((3, 6, 6, 2))
    out, h, c = L.ConvLSTM2D(4, (3, 2), padding="same", return_sequences=True,
                             return_state=True, name="clstm")(x)
    pooled = L.GlobalAveragePooling3D()(out)
    model = keras.Model(x, [pooled, h, c], name="conv_lstm_states")
    assert_matches_keras(model, tmp_path, inputs=[sequences((2, 3, 6, 6, 2))], seed=3)


@pytest.mark.parametrize("options", [dict(), dict(return_sequences=True, padding="same",
                                                  go_backwards=True)], ids=["last", "sequences"])
def test_conv_lstm_1d(options, tmp_path):
    model = keras.Sequential([keras.Input((5, 9, 3)), L.ConvLSTM1D(4, 3, **options)],
                             name="conv_lstm_1d")
    assert_matches_keras(model, tmp_path, inputs=[sequences((2, 5, 9, 3))], seed=4)


@pytest.mark.parametrize("options", [
    dict(),
    dict(return_sequences=True, padding="same", go_backwards=True),
    dict(strides=(1, 2, 2), dilation_rate=1, use_bias=False, return_state=True),
    dict(dilation_rate=(2, 1, 1), padding="same", return_sequences=True, return_state=True),
], ids=["last", "sequences_backwards_same", "strides_state_nobias", "dilation_sequences_state"])
def test_conv_lstm_3d(options, tmp_path):
    x = keras.Input((3, 5, 6, 5, 2))
    out = L.ConvLSTM3D(3, (3, 2, 3), **options)(x)
    model = keras.Model(x, out, name="conv_lstm_3d")
    assert_matches_keras(model, tmp_path, inputs=[sequences((2, 3, 5, 6, 5, 2))], seed=5)


def test_a_mask_reaching_conv_lstm_is_refused_at_load(tmp_path):
    x = keras.Input((3, 4, 4, 2))
    masked = L.Masking()(x)
    model = keras.Model(x, L.ConvLSTM2D(2, 3)(masked), name="masked_conv_lstm")
    path = str(tmp_path / "masked.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError):
        kg.load_model(path)
