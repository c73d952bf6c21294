"""BatchNormalization, LayerNormalization, Rescaling and Normalization against Keras 3 (.keras and
.h5). assert_matches_keras randomises every weight (moving statistics included) first."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

L = keras.layers


@pytest.mark.parametrize("input_shape,kwargs", [
    ((6,), {}), ((4, 6), {}), ((3, 4, 6), {}), ((3, 4, 6), {"axis": 1}), ((3, 4, 6), {"axis": -2}),
    ((3, 4, 6), {"axis": 2, "center": False}), ((4, 6), {"scale": False}),
    ((4, 6), {"center": False, "scale": False}), ((4, 6), {"epsilon": 0.5}),
])
def test_batch_normalization(input_shape, kwargs, tmp_path):
    model = keras.Sequential([keras.Input(input_shape), L.BatchNormalization(**kwargs)], name="bn")
    assert_matches_keras(model, tmp_path)


@pytest.mark.parametrize("input_shape,kwargs", [
    ((6,), {}), ((4, 6), {}), ((4, 6), {"axis": 1}), ((3, 4, 6), {"axis": [1, 2]}),
    ((3, 4, 6), {"axis": [-1, 1]}), ((3, 4, 6), {"axis": 1}), ((3, 4, 6), {"axis": [1, 3]}),
    ((4, 6), {"center": False}), ((4, 6), {"scale": False}),
    ((4, 6), {"center": False, "scale": False}), ((4, 6), {"epsilon": 1e-6}),
    ((4, 6), {"rms_scaling": True}), ((3, 4, 6), {"axis": [2, 3], "rms_scaling": True}),
])
def test_layer_normalization(input_shape, kwargs, tmp_path):
    model = keras.Sequential([keras.Input(input_shape), L.LayerNormalization(**kwargs)], name="ln")
    # Keras warns that rms_scaling is deprecated; it still saves and computes it.
    assert_matches_keras(model, tmp_path)


def test_layer_normalization_on_long_rows(tmp_path):
    model = keras.Sequential([keras.Input((7, 768)), L.LayerNormalization()], name="ln_long")
    inputs = [np.random.default_rng(4).normal(3.0, 2.0, (2, 7, 768)).astype("float32")]
    assert_matches_keras(model, tmp_path, inputs=inputs)


@pytest.mark.parametrize("kwargs,input_shape", [
    ({"scale": 1 / 255.0}, (4, 3)), ({"scale": 2.0, "offset": -1.0}, (4, 3)),
    ({"scale": [0.5, 2.0, -1.0], "offset": [1.0, 0.0, 3.0]}, (4, 3)),
    ({"scale": [0.5, 2.0, -1.0]}, (2, 4, 3)),
])
def test_rescaling(kwargs, input_shape, tmp_path):
    model = keras.Sequential([keras.Input(input_shape), L.Rescaling(**kwargs)], name="rescale")
    assert_matches_keras(model, tmp_path)


def test_rescaling_of_integer_images(tmp_path):
    inputs = keras.Input((4, 4, 3), dtype="uint8")
    model = keras.Model(inputs, L.Rescaling(1 / 127.5, offset=-1)(inputs), name="rescale_uint8")
    images = np.random.default_rng(5).integers(0, 256, (2, 4, 4, 3)).astype("uint8")
    assert_matches_keras(model, tmp_path, inputs=[images])


@pytest.mark.parametrize("kwargs,input_shape", [
    ({"axis": -1}, (4, 3)), ({"axis": 1}, (4, 3)), ({"axis": (1, 2)}, (4, 3)),
    ({"axis": (1, 3)}, (2, 4, 3)), ({"axis": None}, (4, 3)), ({"axis": -1, "invert": True}, (4, 3)),
])
def test_normalization_adapted(kwargs, input_shape, tmp_path):
    layer = L.Normalization(**kwargs)
    data = np.random.default_rng(6).normal(2.0, 3.0, (20,) + input_shape).astype("float32")
    layer.adapt(data)
    model = keras.Sequential([keras.Input(input_shape), layer], name="norm_adapted")
    assert_matches_keras(model, tmp_path, randomize=False, inputs=[data[:3]])


@pytest.mark.parametrize("mean,variance", [(2.0, 4.0), ([1.0, 2.0, 3.0], [0.5, 1.0, 4.0])])
def test_normalization_from_config(mean, variance, tmp_path):
    model = keras.Sequential([keras.Input((4, 3)), L.Normalization(mean=mean, variance=variance)],
                             name="norm_config")
    assert_matches_keras(model, tmp_path, randomize=False)
