"""Core layers against Keras 3 (.keras and .h5): Dense, Flatten, Reshape, Permute, RepeatVector,
the inference-identity regularization layers, Embedding; and Dense built directly from a spec."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg
from kerasgl.layers.core.dense import Dense
from kerasgl.saving.spec import LayerSpec

L = keras.layers


@pytest.mark.parametrize("input_shape", [(5,), (3, 5), (2, 3, 8), (2, 1, 3, 4)])
@pytest.mark.parametrize("units,activation,use_bias", [
    (1, None, True), (4, "relu", True), (7, "tanh", False), (16, "softmax", True),
    (3, "leaky_relu", False),
])
def test_dense_grid(input_shape, units, activation, use_bias, tmp_path):
    model = keras.Sequential([keras.Input(input_shape),
                              L.Dense(units, activation=activation, use_bias=use_bias)], name="dense")
    assert_matches_keras(model, tmp_path)


@pytest.mark.parametrize("units", [1, 3, 10, 32, 33])
@pytest.mark.parametrize("rows", [1, 5, 40])
def test_dense_softmax_in_the_matmul_and_after_it(units, rows, tmp_path):
    """Up to 32 units the softmax runs in the matmul's epilogue (one dispatch, no softmax.comp);
    from 33 on, as a separate softmax. Logits spread wide, so that a missing max shift shows."""
    model = keras.Sequential([keras.Input((24,)), L.Dense(units, activation="softmax")],
                             name=f"dense_softmax_{units}")
    x = np.random.default_rng(units).uniform(-30, 30, (rows, 24)).astype("float32")
    assert_matches_keras(model, tmp_path, inputs=[x])
    with kg.load_model(str(tmp_path / f"dense_softmax_{units}.keras")) as loaded:
        layer = loaded.layers[-1]
        assert ("softmax.comp" in layer.shaders) == (units > 32)


def test_dense_wide_stack(tmp_path):
    model = keras.Sequential([keras.Input((64,)), L.Dense(130, activation="gelu"),
                              L.Dense(33, activation="sigmoid"), L.Dense(10, activation="softmax")],
                             name="dense_stack")
    assert_matches_keras(model, tmp_path, inputs=[np.random.default_rng(3).uniform(
        -1, 1, (37, 64)).astype("float32")], batch_size=16)


def test_dense_from_spec_matches_keras_layer():
    layer = L.Dense(6, activation="selu")
    x = np.random.default_rng(0).uniform(-2, 2, (4, 9)).astype("float32")
    expected = np.asarray(layer(x))
    config = layer.get_config()
    config["dtype"] = "float32"
    spec = LayerSpec("Dense", layer.name, config, weights=layer.get_weights())
    ours = Dense(spec, 3)
    ours.build((None, 9))
    try:
        with kg.tidy():
            actual = ours.call(kg.tensor(x)).numpy()
    finally:
        ours.dispose()
    np.testing.assert_allclose(actual, expected, atol=1e-4, rtol=1e-4)


def test_dense_rejects_wrong_input_width():
    layer = L.Dense(3)
    layer.build((None, 4))
    spec = LayerSpec("Dense", "d", layer.get_config(), weights=layer.get_weights())
    ours = Dense(spec, 3)
    with pytest.raises(kg.ShapeError, match="last input dimension to be 4"):
        ours.compute_output_shape((None, 5))


@pytest.mark.parametrize("make,input_shape", [
    (lambda: L.Flatten(), (3, 4, 5)),
    (lambda: L.Flatten(data_format="channels_first"), (3, 4, 5)),
    (lambda: L.Reshape((20, 3)), (3, 4, 5)),
    (lambda: L.Reshape((-1, 2)), (3, 4, 2)),
    (lambda: L.Reshape((60,)), (3, 4, 5)),
    (lambda: L.Permute((2, 1)), (3, 4)),
    (lambda: L.Permute((3, 1, 2)), (3, 4, 5)),
    (lambda: L.Permute((2, 3, 1)), (3, 4, 5)),
    (lambda: L.RepeatVector(3), (5,)),
    (lambda: L.Dropout(0.5), (4, 5)),
    (lambda: L.SpatialDropout1D(0.3), (4, 5)),
    (lambda: L.SpatialDropout2D(0.3), (3, 4, 5)),
    (lambda: L.SpatialDropout3D(0.3), (2, 3, 4, 5)),
    (lambda: L.GaussianNoise(1.0), (6,)),
    (lambda: L.GaussianDropout(0.4), (6,)),
    (lambda: L.AlphaDropout(0.4), (6,)),
    (lambda: L.ActivityRegularization(l1=0.1, l2=0.1), (6,)),
], ids=["flatten", "flatten_cf", "reshape", "reshape_-1", "reshape_flat", "permute21",
        "permute312", "permute231", "repeat", "dropout", "sdrop1", "sdrop2", "sdrop3", "gnoise",
        "gdrop", "adrop", "actreg"])
def test_shape_and_identity_layers(make, input_shape, tmp_path):
    # A Dense before the layer makes the data non-trivial; one after checks the layout it leaves.
    layer = make()
    model = keras.Sequential([keras.Input(input_shape), L.Dense(input_shape[-1]), layer,
                              L.Dense(2)], name="shape_layer")
    # Keras 3's SpatialDropout get_config has no "trainable" key: the legacy .h5 reader must
    # still tell it from an op node (both formats are checked).
    assert_matches_keras(model, tmp_path)


@pytest.mark.parametrize("input_dtype", ["int32", "float32"])
@pytest.mark.parametrize("mask_zero", [False, True])
def test_embedding(input_dtype, mask_zero, tmp_path):
    inputs = keras.Input((6,), dtype=input_dtype)
    outputs = L.Embedding(10, 4, mask_zero=mask_zero)(inputs)
    model = keras.Model(inputs, L.Flatten()(outputs) if not mask_zero else outputs, name="embedding")
    ids = np.random.default_rng(2).integers(0, 10, size=(3, 6)).astype(input_dtype)
    assert_matches_keras(model, tmp_path, inputs=[ids])


def test_embedding_out_of_range_index_raises(tmp_path):
    model = keras.Sequential([keras.Input((3,), dtype="int32"), L.Embedding(5, 2)], name="emb_oob")
    path = str(tmp_path / "emb.keras")
    model.save(path)
    with kg.load_model(path) as loaded:
        with pytest.raises(kg.InputValueError, match="out of range"):
            loaded.predict(np.array([[1, 2, 7]], np.int32), verbose=0)
