"""keras.ops maths recorded as op nodes (layers/op_nodes_math.py) against live Keras: the
elementwise functions that are not activations, and var / std / logsumexp / norm."""
import os

import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg

ops = keras.ops


def test_elementwise_math(tmp_path):
    x = keras.Input((5, 6), name="x")
    model = keras.Model(x, [ops.floor(x * 3.0), ops.ceil(x * 3.0), ops.round(x * 4.0),
                            ops.sign(x), ops.erf(x * 2.0), ops.expm1(x), ops.log1p(ops.abs(x)),
                            ops.reciprocal(x + 3.0), ops.rsqrt(ops.abs(x) + 0.5)], name="math")
    # Halves (round to even) and the tiny arguments where log1p / expm1 must not cancel.
    values = np.linspace(-2.5, 2.5, 2 * 5 * 6).reshape(2, 5, 6).astype("float32")
    values[0, 0, :] = [0.125, -0.125, 0.375, 1e-6, -1e-7, 0.0]
    assert_matches_keras(model, tmp_path, inputs=[values])


def test_statistics(tmp_path):
    x = keras.Input((4, 5), name="x")
    model = keras.Model(x, [ops.var(x, axis=-1), ops.std(x, axis=(1, 2), keepdims=True),
                            ops.logsumexp(x * 30.0, axis=1), ops.logsumexp(x, axis=-1, keepdims=True),
                            ops.norm(x, axis=(1, 2), keepdims=True),
                            ops.norm(x, ord="fro", axis=(2, 1))], name="stats")
    assert_matches_keras(model, tmp_path)


def test_unsupported_options_are_refused_at_load(tmp_path):
    x = keras.Input((4, 5), name="x")
    model = keras.Model(x, [ops.round(x, 2), ops.norm(x, ord="nuc", axis=(1, 2)), ops.norm(x, ord=1, axis=1)], name="refused")
    path = os.path.join(str(tmp_path), "refused.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    message = str(refused.value)
    assert "decimals=2" in message and "ord='nuc'" in message \
        and "ord=1" in message and message.count("  - ") == 3, message


def test_cumulative(tmp_path):
    x = keras.Input((4, 5), name="x")
    model = keras.Model(x, [ops.cumsum(x, axis=1), ops.cumsum(x, axis=-1), ops.cumprod(x, axis=1),
                            ops.cumprod(x * 0.5 + 1.0, axis=2), ops.cumsum(x)], name="cumulative")
    assert_matches_keras(model, tmp_path)
