"""Dtypes through keras.ops graphs (layers/typed_shapes.py): int32 results (argmax, argmin, slices
of integer Inputs) come back as Keras's dtype, int32 feeds the ops that take it (one_hot), and an
int32 tensor reaching an op kerasgl runs on float32 only is refused at load, not at predict."""
import os

import numpy as np
import pytest
from keras_ref import as_list, assert_matches_keras, keras, random_inputs

import kerasgl as kg

ops = keras.ops


def _predictions(model, tmp_path, inputs):
    expected = as_list(model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0))
    path = os.path.join(str(tmp_path), f"{model.name}.keras")
    model.save(path)
    with kg.load_model(path) as loaded:
        actual = as_list(loaded.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0))
        specs = loaded.outputs if hasattr(loaded, "outputs") else None
    return expected, actual, specs


def test_index_results_have_keras_dtypes(tmp_path):
    x = keras.Input((5, 7), name="x")
    ids = keras.Input((6,), dtype="int32", name="ids")
    best = ops.argmax(x, axis=-1)
    model = keras.Model([x, ids], [best, ops.argmin(x, axis=1, keepdims=True),
                                   ids[:, 1:4], ops.one_hot(best, 7), ops.one_hot(ids, 5),
                                   ops.transpose(ops.reshape(ids, (-1, 2, 3)), (0, 2, 1))],
                        name="index_dtypes")
    inputs = random_inputs(model)
    inputs[0][0, 0, 2:4] = 3.0        # ties: the first index wins, as in Keras
    expected, actual, _ = _predictions(model, tmp_path, inputs)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert np.asarray(a).dtype == np.asarray(e).dtype, f"output {i}: {np.asarray(a).dtype}"
        np.testing.assert_array_equal(a, e, err_msg=f"output {i}")
    assert_matches_keras(model, tmp_path, inputs=inputs, formats=(".h5",))


def test_output_specs_carry_dtypes(tmp_path):
    x = keras.Input((4,), name="x")
    model = keras.Model(x, [ops.argmax(x, axis=-1), x * 2.0], name="output_dtypes")
    path = os.path.join(str(tmp_path), "output_dtypes.keras")
    model.save(path)
    with kg.load_model(path) as loaded:
        assert [spec.dtype for spec in loaded._graph.output_specs] == ["int32", "float32"]


def test_int32_into_a_float_op_is_refused_at_load(tmp_path):
    x = keras.Input((4, 5), name="x")
    ids = keras.Input((3,), dtype="int32", name="ids")
    model = keras.Model([x, ids], [ops.sigmoid(ops.argmax(x, axis=-1)), ops.floor(ids),
                                   ops.one_hot(ops.argmax(x, axis=-1), 5) + 1.0],
                        name="refused_dtypes")
    path = os.path.join(str(tmp_path), "refused_dtypes.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    message = str(refused.value)
    assert "(Sigmoid)" in message and "int32 argument" in message, message


def test_casts_between_float32_and_int32(tmp_path):
    x = keras.Input((3, 4), name="x")
    ids = keras.Input((5,), dtype="int32", name="ids")
    model = keras.Model([x, ids], [ops.cast(x * 7.0, "int32"), ops.cast(ids, "float32") * 0.5,
                                   ops.cast(ops.argmax(x, axis=-1), "float32") + 1.0,
                                   ops.cast(x, "float32"), ops.cast(ids, "int32")], name="casts")
    inputs = random_inputs(model)
    expected, actual, _ = _predictions(model, tmp_path, inputs)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert np.asarray(a).dtype == np.asarray(e).dtype, f"output {i}: {np.asarray(a).dtype}"
        np.testing.assert_allclose(a, e, rtol=1e-6, err_msg=f"output {i}")
    assert_matches_keras(model, tmp_path, inputs=inputs, formats=(".h5",))


def test_casts_to_other_dtypes_are_refused_at_load(tmp_path):
    x = keras.Input((3,), name="x")
    model = keras.Model(x, [ops.cast(x, "uint8"), ops.cast(x, "float16")], name="refused_casts")
    path = os.path.join(str(tmp_path), "refused_casts.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    message = str(refused.value)
    assert "a cast to 'uint8'" in message and "a cast to 'float16'" in message, message
