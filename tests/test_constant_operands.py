"""Keras 3 operations with constant operands (`x + np.arange(n)`, a position table computed
eagerly): Keras saves the array in the op node's call; kerasgl makes it a weight owned by the
model (compiler/constants.py), uploaded at load and freed at dispose. Against Keras, both formats."""
import numpy as np

from keras_ref import assert_matches_keras, keras

import kerasgl as kg

ops = keras.ops
SEQ, DIM = 5, 4


def _positions():
    # A sinusoidal position table, computed eagerly in numpy as people do.
    pos = np.arange(SEQ)[:, None] / np.power(100.0, np.arange(DIM)[None, :] / DIM)
    return np.where(np.arange(DIM) % 2 == 0, np.sin(pos), np.cos(pos)).astype("float32")


def test_position_table_and_arange(tmp_path):
    inputs = keras.Input((SEQ, DIM))
    x = inputs + _positions()                               # float table, broadcast over batch
    x = ops.multiply(x, np.float32(0.5))                     # a 0-d array: a number
    x = keras.layers.Dense(3)(x)
    x = ops.add(x, np.arange(3))                            # integer array, promoted as Keras does
    x = ops.subtract(np.linspace(-1, 1, 3).astype("float32"), x)   # the constant first
    assert_matches_keras(keras.Model(inputs, x, name="positions"), tmp_path)


def test_constant_matmul_and_concatenate(tmp_path):
    rng = np.random.default_rng(5)
    inputs = keras.Input((SEQ, DIM))
    projected = ops.matmul(inputs, rng.uniform(-1, 1, (DIM, 6)).astype("float32"))
    scaled = ops.multiply(inputs, rng.uniform(-1, 1, (SEQ, DIM)).astype("float32"))
    joined = ops.concatenate([projected, scaled], axis=-1)
    assert_matches_keras(keras.Model(inputs, joined, name="const_matmul"), tmp_path)


def test_constants_are_not_layers_or_parameters_and_are_freed(tmp_path):
    inputs = keras.Input((SEQ, DIM))
    outputs = keras.layers.Dense(2)(inputs + _positions())
    model = keras.Model(inputs, outputs, name="counted")
    path = str(tmp_path / "counted.keras")
    model.save(path)
    before = kg.memory().num_tensors
    loaded = kg.load_model(path)
    try:
        assert [layer.name for layer in loaded.layers] == [layer.name for layer in model.layers]
        assert loaded.count_params() == model.count_params()
        assert kg.memory().num_tensors > before       # the table lives on the GPU with the model
    finally:
        loaded.dispose()
    assert kg.memory().num_tensors == before
