"""keras.ops maths recorded as op nodes (layers/op_nodes_math.py) against live Keras: the
elementwise functions that are not activations, and var / std / logsumexp / norm (vector and
matrix norms; the SVD ones and axis=None refused)."""
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


def test_vector_and_matrix_norms(tmp_path):
    """ops.norm over one axis (every kind of ord, p < 0 with zeros: jnp's inf terms), over two
    (the matrix norms without SVD, either axis order), keepdims, int32 and bool inputs (float32
    out). Keras's own graph runs a tuple axis only (an int becomes an unhashable list for jit)."""
    x = keras.Input((4, 5), name="x")
    i = keras.Input((4, 5), dtype="int32", name="i")
    b = keras.Input((4, 5), dtype="bool", name="b")
    vector = [ops.norm(x, ord=order, axis=(axis,), keepdims=keepdims) for order, axis, keepdims in
              [(None, 2, False), (2, 1, True), (1, -1, False), (np.inf, 1, False),
               (-np.inf, 2, True), (0, 2, False), (3, 2, True), (-1.5, 2, False),
               (0.5, 1, False), (-1, -1, False)]]
    matrix = [ops.norm(x, ord=order, axis=axes, keepdims=keepdims) for order, axes, keepdims in
              [(1, (1, 2), False), (-1, (2, 1), False), (np.inf, (1, 2), True),
               (-np.inf, (2, 1), False), (np.inf, (-1, -2), False)]]
    typed = [ops.norm(i, axis=(2,)), ops.norm(b, ord=1, axis=(1,)),
             ops.norm(i, ord=np.inf, axis=(1, 2)), ops.norm(i, ord=-0.5, axis=(2,))]
    model = keras.Model([x, i, b], vector + matrix + typed, name="norms")
    rng = np.random.default_rng(7)
    values = rng.uniform(-2, 2, (3, 4, 5)).astype("float32")
    values[0, 1, :2], values[1, :, 3], values[2, 2, :] = 0.0, 0.0, 0.0
    inputs = [values, rng.integers(-3, 4, (3, 4, 5)).astype("int32"), rng.random((3, 4, 5)) < 0.5]
    assert_matches_keras(model, tmp_path, inputs=inputs)


def test_unsupported_options_are_refused_at_load(tmp_path):
    x = keras.Input((4, 5), name="x")
    model = keras.Model(x, [ops.round(x, 2), ops.norm(x, ord="nuc", axis=(1, 2)),
                            ops.norm(x, ord=-2, axis=(1, 2)), ops.norm(x, keepdims=True)],
                        name="refused")
    path = os.path.join(str(tmp_path), "refused.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    message = str(refused.value)
    assert "decimals=2" in message and "ord='nuc'" in message and "ord=-2" in message \
        and "SVD" in message and "axis=None" in message and message.count("  - ") == 4, message


def test_cumulative(tmp_path):
    x = keras.Input((4, 5), name="x")
    model = keras.Model(x, [ops.cumsum(x, axis=1), ops.cumsum(x, axis=-1), ops.cumprod(x, axis=1),
                            ops.cumprod(x * 0.5 + 1.0, axis=2), ops.cumsum(x)], name="cumulative")
    assert_matches_keras(model, tmp_path)
