"""Identity and Pipeline against Keras 3. A Pipeline runs from .keras files only: Keras's .h5 writer
saves neither its weights nor the config keys that tell a layer from an op, and kerasgl refuses
such a file at load rather than run it with made-up weights."""
import numpy as np
import pytest
import kerasgl as kg
from keras_ref import assert_matches_keras, keras

L = keras.layers


def test_identity(tmp_path):
    inputs = keras.Input((4, 3))
    model = keras.Model(inputs, L.Dense(2)(L.Identity()(inputs)), name="identity")
    assert_matches_keras(model, tmp_path)


def test_identity_passes_a_mask_on(tmp_path):
    inputs = keras.Input((5, 3))
    x = L.Identity()(L.Masking(0.0)(inputs))
    model = keras.Model(inputs, L.GlobalAveragePooling1D()(x), name="identity_masked")
    data = np.random.default_rng(2).uniform(-1, 1, (2, 5, 3)).astype("float32")
    data[0, 2:] = 0.0
    assert_matches_keras(model, tmp_path, inputs=[data])


def _pipeline_model():
    inputs = keras.Input((5,))
    x = L.Pipeline([L.Dense(3, activation="relu"), L.BatchNormalization(epsilon=0.01),
                    L.Dropout(0.5), L.Dense(2, use_bias=False)])(inputs)
    return keras.Model(inputs, L.Identity()(x), name="pipeline")


def test_pipeline(tmp_path):
    assert_matches_keras(_pipeline_model(), tmp_path, formats=(".keras",))


def test_weightless_pipeline(tmp_path):
    inputs = keras.Input((4, 3))
    x = L.Pipeline([L.Rescaling(2.0, offset=-1.0), L.Activation("tanh"), L.Flatten()])(inputs)
    assert_matches_keras(keras.Model(inputs, x, name="pipeline_plain"), tmp_path,
                         formats=(".keras",))


def test_pipeline_h5_is_refused(tmp_path):
    path = str(tmp_path / "pipeline.h5")
    _pipeline_model().save(path)
    with pytest.raises(kg.KerasGLError, match="Pipeline"):
        kg.load_model(path)


def test_pipeline_refuses_a_mask(tmp_path):
    inputs = keras.Input((5, 3))
    x = L.Pipeline([L.Dense(2)])(L.Masking(0.0)(inputs))
    path = str(tmp_path / "pipeline_mask.keras")
    keras.Model(inputs, L.GlobalAveragePooling1D()(x)).save(path)
    with pytest.raises(kg.UnsupportedLayerError, match="Pipeline|pipeline"):
        kg.load_model(path)
