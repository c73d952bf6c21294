"""Every built-in Keras activation, as an Activation layer and fused into Dense, against Keras 3
(.keras and .h5); plus the activation layers with their options (ReLU, LeakyReLU, PReLU, ELU,
Softmax, ThresholdedReLU)."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg
from kerasgl.layers import activation_functions as kgl_activations

L = keras.layers
POINTWISE = ["linear", "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "sigmoid",
             "hard_sigmoid", "hard_silu", "hard_swish", "silu", "swish", "softplus", "softsign",
             "tanh", "exponential", "mish", "celu", "squareplus", "soft_shrink", "hard_shrink",
             "sparse_plus", "sparse_sigmoid", "tanh_shrink", "hard_tanh", "log_sigmoid"]


def wide_inputs(shape, seed=1, scale=4.0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-scale, scale, size=(3,) + shape).astype("float32")]


@pytest.mark.parametrize("name", POINTWISE + ["softmax", "log_softmax"])
def test_activation_layer_and_fused_dense(name, tmp_path):
    inputs = keras.Input((4, 6))
    direct = L.Activation(name)(inputs)
    fused = L.Dense(5, activation=name)(inputs)
    model = keras.Model(inputs, [direct, fused], name=f"act_{name}")
    assert_matches_keras(model, tmp_path, inputs=wide_inputs((4, 6)))


def test_unknown_and_non_pointwise_activations_are_refused():
    with pytest.raises(kg.UnsupportedLayerError, match="nonsense"):
        kgl_activations.pointwise("nonsense", 3, "Layer 'x'")
    with pytest.raises(kg.UnsupportedLayerError, match="glu"):
        kgl_activations.pointwise("glu", 3)


def test_hard_sigmoid_formula_depends_on_keras_major():
    assert kgl_activations.pointwise("hard_sigmoid", 2).function == "act_hard_sigmoid_k2"
    assert kgl_activations.pointwise("hard_sigmoid", 3).function == "act_hard_sigmoid"


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_both_forms_match_keras_ops(approximate):
    x = wide_inputs((50,))[0]
    expected = np.asarray(keras.ops.gelu(x, approximate=approximate))
    fn = kgl_activations.gelu(approximate)
    with kg.tidy():
        from kerasgl.ops import elementwise
        actual = elementwise.unary(fn.function[4:], kg.tensor(x)).numpy()
    np.testing.assert_allclose(actual, expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kwargs", [
    {}, {"max_value": 6.0}, {"max_value": 1.5}, {"negative_slope": 0.1},
    {"negative_slope": 0.2, "max_value": 2.0}, {"threshold": 0.5}, {"threshold": 1.0, "max_value": 2.0},
    {"threshold": 0.5, "negative_slope": 0.3}, {"threshold": 1.0, "max_value": 2.0, "negative_slope": 0.1},
    {"max_value": 0.0},
])
def test_relu_layer_options(kwargs, tmp_path):
    model = keras.Sequential([keras.Input((7,)), L.ReLU(**kwargs)], name="relu_opts")
    assert_matches_keras(model, tmp_path, inputs=wide_inputs((7,), scale=3.0))


@pytest.mark.parametrize("layer", [
    lambda: L.LeakyReLU(), lambda: L.LeakyReLU(negative_slope=0.05), lambda: L.ELU(),
    lambda: L.ELU(alpha=0.5), lambda: L.Softmax(), lambda: L.Softmax(axis=1),
    lambda: L.Softmax(axis=[1, 2]), lambda: L.Softmax(axis=(1, 3)),
], ids=["leaky", "leaky_0.05", "elu", "elu_0.5", "softmax", "softmax_ax1", "softmax_12",
        "softmax_13"])
def test_activation_layers(layer, tmp_path):
    model = keras.Sequential([keras.Input((3, 4, 5)), layer()], name="act_layer")
    assert_matches_keras(model, tmp_path, inputs=wide_inputs((3, 4, 5)))


@pytest.mark.parametrize("shape,shared_axes", [
    ((6,), None), ((4, 5), None), ((4, 5), [1]), ((3, 4, 5), [1, 2]), ((3, 4, 5), [2]),
])
def test_prelu(shape, shared_axes, tmp_path):
    model = keras.Sequential([keras.Input(shape), L.PReLU(shared_axes=shared_axes)], name="prelu")
    assert_matches_keras(model, tmp_path)


def test_keras2_file_uses_keras2_hard_sigmoid():
    # Written by tf-keras (scripts/make_keras2_fixtures.py) with its outputs; Keras 2's
    # hard_sigmoid is clip(0.2 x + 0.5, 0, 1), not Keras 3's relu6(x + 3) / 6.
    import os
    data_dir = os.path.join(os.path.dirname(__file__), "data", "keras2")
    data = np.load(os.path.join(data_dir, "hard_sigmoid.npz"))
    with kg.load_model(os.path.join(data_dir, "hard_sigmoid.h5")) as model:
        outputs = model.predict(data["input_0"], verbose=0)
    outputs = outputs if isinstance(outputs, list) else [outputs]
    assert len(outputs) == 2
    for i, actual in enumerate(outputs):
        np.testing.assert_allclose(actual, data[f"output_{i}"], atol=1e-4, rtol=1e-4)
