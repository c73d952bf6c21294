"""keras.ops indexing recorded as op nodes (keras_ops/numpy/joining.py) against live Keras:
basic slicing (GetItem), keras.ops.slice, stack and split; and what load refuses."""
import os

import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg

ops = keras.ops


def test_basic_slicing(tmp_path):
    x = keras.Input((4, 6, 3), name="x")
    model = keras.Model(x, [x[:, 0], x[:, 1:3], x[:, ::2, 1:], x[:, ::-1, -2:0:-2], x[..., -1],
                            x[:, None, 2, ..., None], x[:, -3:, 4], x[:, 5:1], x[0]],
                        name="slicing")
    assert_matches_keras(model, tmp_path)


def test_slicing_int_inputs_and_after_ops(tmp_path):
    x = keras.Input((5, 4), name="x")
    ids = keras.Input((7,), dtype="int32", name="ids")
    embedded = keras.layers.Embedding(10, 4)(ids[:, 1:-1])
    y = ops.softmax(x[:, 1:, :3], axis=-1)[:, ::2]
    model = keras.Model([x, ids], [y, embedded], name="slicing_mixed")
    assert_matches_keras(model, tmp_path)


def test_slice_stack_split(tmp_path):
    x = keras.Input((6, 4), name="x")
    parts = ops.split(x, 3, axis=1)
    uneven = ops.split(x, [1, 3], axis=-1)
    model = keras.Model(x, [ops.slice(x, (0, 2, 1), (2, 3, 2)), ops.stack([x, x * 2.0], axis=1),
                            ops.stack(parts, axis=-1), *uneven], name="slice_stack_split")
    assert_matches_keras(model, tmp_path)


def test_split_of_an_unknown_size_is_refused_at_load(tmp_path):
    x = keras.Input((None, 6), name="x")
    model = keras.Model(x, [x[:, 0], ops.split(x, 2, axis=1)[0]], name="refused_split")
    path = os.path.join(str(tmp_path), "refused_split.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    assert "(Split)" in str(refused.value) and "unknown size" in str(refused.value)


def test_tile_repeat_pad(tmp_path):
    x = keras.Input((3, 4), name="x")
    model = keras.Model(x, [ops.tile(x, (1, 2, 3)), ops.tile(x, 2), ops.repeat(x, 3, axis=1),
                            ops.repeat(x, 2), ops.pad(x, ((0, 0), (1, 2), (3, 0))),
                            ops.pad(x, ((0, 0), (2, 1), (0, 1)), constant_values=-1.5)],
                        name="tile_repeat_pad")
    assert_matches_keras(model, tmp_path)


def test_other_pad_modes_and_tensor_indices_are_refused_at_load(tmp_path):
    x = keras.Input((4, 6), name="x")
    model = keras.Model(x, [ops.pad(x, ((0, 0), (1, 1), (2, 2)), mode="reflect"),
                            ops.repeat(x, 2, axis=1)], name="refused_pad")
    path = os.path.join(str(tmp_path), "refused_pad.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    message = str(refused.value)
    assert "(Pad)" in message and "mode='reflect'" in message and "Repeat" not in message, message
