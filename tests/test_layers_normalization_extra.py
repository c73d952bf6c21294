"""GroupNormalization, RMSNormalization, UnitNormalization and SpectralNormalization against
Keras 3 (.keras and .h5), with non-default options; the layers that pass a mask on are run on a
masked input that a mask-consuming pooling reads after them."""
import numpy as np
import pytest
import kerasgl as kg
from keras_ref import assert_matches_keras, keras

L = keras.layers


@pytest.mark.parametrize("input_shape,kwargs", [
    ((4, 4, 8), dict(groups=4)), ((4, 4, 8), dict(groups=2, epsilon=0.1)),
    ((5, 6), dict(groups=3, center=False)), ((5, 6), dict(groups=-1, scale=False)),
    ((6, 4, 3), dict(groups=3, axis=1)), ((6, 4, 3), dict(groups=2, axis=-2)),
    ((4, 4, 8), dict(groups=8, center=False, scale=False)), ((8,), dict(groups=2)),
])
def test_group_normalization(input_shape, kwargs, tmp_path):
    model = keras.Sequential([keras.Input(input_shape), L.GroupNormalization(**kwargs)], name="gn")
    assert_matches_keras(model, tmp_path)


@pytest.mark.parametrize("input_shape,kwargs", [
    ((6,), {}), ((3, 6), {}), ((3, 6), dict(axis=-1, epsilon=0.5)), ((3, 4, 6), dict(axis=[2, 3])),
    ((3, 4, 6), dict(axis=[3, 2], epsilon=1e-3)),
])
def test_rms_normalization(input_shape, kwargs, tmp_path):
    model = keras.Sequential([keras.Input(input_shape), L.RMSNormalization(**kwargs)], name="rms")
    assert_matches_keras(model, tmp_path)


@pytest.mark.parametrize("input_shape,kwargs", [
    ((6,), {}), ((3, 6), dict(axis=1)), ((3, 4, 6), dict(axis=[1, 2])),
    ((3, 4, 6), dict(axis=[-1, 1])),
])
def test_unit_normalization(input_shape, kwargs, tmp_path):
    model = keras.Sequential([keras.Input(input_shape), L.UnitNormalization(**kwargs)], name="unit")
    assert_matches_keras(model, tmp_path)


@pytest.mark.parametrize("make", [lambda: L.GroupNormalization(groups=2),
                                  lambda: L.UnitNormalization()])
def test_masked_input_passes_through(make, tmp_path):
    inputs = keras.Input((5, 4))
    x = make()(L.Masking(0.0)(inputs))
    model = keras.Model(inputs, L.GlobalAveragePooling1D()(x), name="masked_norm")
    data = np.random.default_rng(3).uniform(-1, 1, (2, 5, 4)).astype("float32")
    data[0, 3:] = 0.0
    data[1, 1] = 0.0
    assert_matches_keras(model, tmp_path, inputs=[data])


@pytest.mark.parametrize("make,input_shape", [
    (lambda: L.Dense(3, activation="relu"), (5,)),
    (lambda: L.Conv2D(4, 3, padding="same"), (6, 6, 2)),
    (lambda: L.Dense(4, use_bias=False), (3, 5)),
])
def test_spectral_normalization(make, input_shape, tmp_path):
    inputs = keras.Input(input_shape)
    outputs = L.SpectralNormalization(make(), power_iterations=2)(inputs)
    model = keras.Model(inputs, outputs, name="spectral")
    assert_matches_keras(model, tmp_path)


def test_spectral_normalization_of_embedding_is_refused(tmp_path):
    """Keras casts the output to the integer ids' dtype (truncating it): refused at load."""
    inputs = keras.Input((3,), dtype="int32")
    model = keras.Model(inputs, L.SpectralNormalization(L.Embedding(10, 4))(inputs))
    path = str(tmp_path / "sn_embedding.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError, match="Embedding"):
        kg.load_model(path)
