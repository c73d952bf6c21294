"""Merging layers against Keras 3 (.keras and .h5): Add, Subtract, Multiply, Average, Maximum,
Minimum (with broadcasting and rank expansion as Keras's Merge does), Concatenate on every axis,
Dot with axes and normalize."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

L = keras.layers
ELEMENTWISE = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"]


SHAPE_CASES = {
    "two": [(4, 5), (4, 5)], "three": [(4, 5), (4, 5), (4, 5)], "bcast": [(4, 5), (1, 5)],
    "bcast3d": [(3, 4, 5), (3, 1, 5)], "rank_expand": [(4, 5), (5,)],
}
# Subtract takes exactly two inputs: it gets no three-input case.
ELEMENTWISE_CASES = [pytest.param(name, shapes, id=f"{name}-{label}")
                     for name in ELEMENTWISE for label, shapes in SHAPE_CASES.items()
                     if not (name == "Subtract" and len(shapes) != 2)]


@pytest.mark.parametrize("name,shapes", ELEMENTWISE_CASES)
def test_elementwise_merges(name, shapes, tmp_path):
    inputs = [keras.Input(s) for s in shapes]
    # A Dense on each input makes them differ (and randomised weights give distinct values).
    branches = [L.Dense(s[-1])(x) for s, x in zip(shapes, inputs)]
    model = keras.Model(inputs, getattr(L, name)()(branches), name=f"merge_{name.lower()}")
    assert_matches_keras(model, tmp_path)


@pytest.mark.parametrize("axis,shapes", [
    (-1, [(3, 4), (3, 2), (3, 1)]), (1, [(3, 4), (5, 4)]), (3, [(2, 3, 4), (2, 3, 2)]),
    (1, [(2, 3, 4), (1, 3, 4)]), (-2, [(2, 3, 4), (2, 1, 4), (2, 2, 4)]),
])
def test_concatenate(axis, shapes, tmp_path):
    inputs = [keras.Input(s) for s in shapes]
    model = keras.Model(inputs, L.Concatenate(axis=axis)([L.Dense(s[-1])(x) for s, x in zip(shapes, inputs)]),
                        name="concat")
    assert_matches_keras(model, tmp_path)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("axes,shapes", [
    (1, [(5,), (5,)]), (-1, [(5,), (5,)]), (2, [(3, 5), (4, 5)]), (1, [(5, 3), (5, 4)]),
    ((2, 1), [(3, 5), (5, 4)]), ((1, 2), [(5, 3), (4, 5)]), ((2, 2), [(3, 4, 5), (6, 4)]), ((3, 1), [(3, 4, 5), (5, 2, 2)]),
    ((1, 2), [(5,), (3, 5)]), ((1, 1), [(5, 2), (5,)]),
])
def test_dot(axes, shapes, normalize, tmp_path):
    inputs = [keras.Input(s) for s in shapes]
    model = keras.Model(inputs, L.Dot(axes=axes, normalize=normalize)(inputs), name="dot")
    assert_matches_keras(model, tmp_path)
