"""keras.ops that move, pick or make values, recorded as op nodes (keras_ops/numpy/rearranging.py,
op_nodes_layout_values.py), against live Keras in both formats; and what load refuses."""
import os

import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg

ops = keras.ops


def _refused(model, tmp_path, *words):
    path = os.path.join(str(tmp_path), f"{model.name}.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    message = str(refused.value)
    for word in words:
        assert word in message, message
    return message


def test_flips_rolls_and_axes(tmp_path):
    x = keras.Input((3, 4, 2), name="x")
    model = keras.Model(x, [ops.flip(x, axis=-1), ops.flip(x, axis=(1, 2)), ops.fliplr(x),
                            ops.roll(x, 2, axis=-2), ops.roll(x, (1, -3), axis=(1, 2)),
                            ops.rot90(x, k=3, axes=(1, 2)), ops.rot90(x, axes=(-1, 1)),
                            ops.swapaxes(x, 1, -1), ops.moveaxis(x, -1, 1),
                            ops.moveaxis(x, (1, 2), (-1, -2))], name="flips")
    assert_matches_keras(model, tmp_path)


def test_triangles_diagonals_and_broadcast(tmp_path):
    sq = keras.Input((4, 4), name="sq")
    cube = keras.Input((2, 3, 4), name="cube")
    v = keras.Input((5,), name="v")
    model = keras.Model([sq, cube, v], [
        ops.tril(sq), ops.tril(sq, k=-1), ops.triu(cube, 1), ops.triu(cube, k=-2),
        ops.diagonal(sq, offset=1, axis1=1, axis2=2), ops.diagonal(cube, -1, axis1=-1, axis2=2),
        ops.diag(v[0]), ops.diag(v[1], k=-2), ops.diag(sq[0], k=1), ops.diagflat(v[0], k=1),
        ops.broadcast_to(sq[0], (2, 4, 4)), ops.broadcast_to(v[0], (3, 5)),
        ops.trace(sq, axis1=1, axis2=2), ops.trace(cube, offset=1, axis1=-1, axis2=1),
        ops.trace(sq, offset=9, axis1=1, axis2=2)], name="triangles")
    assert_matches_keras(model, tmp_path)


def test_stacks_splits_unstack_append_meshgrid(tmp_path):
    x = keras.Input((4, 6), name="x")
    y = keras.Input((2, 6), name="y")
    cube = keras.Input((2, 3, 4), name="cube")
    model = keras.Model([x, y, cube], [
        ops.hstack([x, y, x]), ops.dstack([cube, cube * 2.0]), ops.vstack([x[0], y[1], x[1]]),
        ops.flipud(x[1]),
        *ops.hsplit(x, 2), *ops.hsplit(x, [1, 3]), *ops.vsplit(x[0], [3]), *ops.dsplit(cube, [1]),
        *ops.array_split(x, 4, axis=-1), *ops.array_split(cube, 2, axis=2),
        *ops.unstack(cube, axis=-1), *ops.unstack(x, num=4, axis=1),
        ops.append(x, y, axis=1), ops.append(x[0], y[1]), ops.append(x, x[:, :, :2] * 3.0, -1),
        *ops.meshgrid(x[0, 0], y[0, :, 0]), *ops.meshgrid(x[0, 0], y[0, 0], cube[0, 0, 0, :3],
                                                       indexing="ij")], name="stacks")
    assert_matches_keras(model, tmp_path)


def test_int32_inputs_keep_their_words(tmp_path):
    ids = keras.Input((3, 4), dtype="int32", name="ids")
    other = keras.Input((3, 2), dtype="int32", name="other")
    inputs = [np.array([[[0, -1, 2**31 - 1, -2**31], [7, -7, 123456789, -2],
                         [1, 2, 3, 4]]] * 2, "int32"),
              np.array([[[-1, 5], [2**30, -3], [0, 9]]] * 2, "int32")]
    model = keras.Model([ids, other], [
        ops.flip(ids, -1), ops.roll(ids, 1, axis=1), ops.tril(ids), ops.hstack([ids, ids]),
        ops.append(ids, other, axis=-1), *ops.hsplit(ids, [1]), ops.copy(ids),
        ops.take(ids, np.array([3, -1, 0]), axis=-1), ops.take_along_axis(
            ids, ops.argmax(ops.cast(ids, "float32"), axis=-1, keepdims=True), axis=-1),
        ops.take_along_axis(ids, ops.zeros_like(ids) + other[:, :, :1] - 6, axis=2),
        ops.take(ids, other[0, 1:], axis=1),
        ops.imag(ids), ops.full_like(ids, 7), ops.full_like(ids, -3, dtype="int32"),
        ops.moveaxis(ids, 1, 2)], name="int_words")
    assert_matches_keras(model, tmp_path, inputs=inputs)


def test_take_with_constant_and_tensor_indices(tmp_path):
    x = keras.Input((3, 4), name="x")
    ids = keras.Input((5,), dtype="int32", name="ids")
    table = np.random.default_rng(3).uniform(-1, 1, (6, 3)).astype("float32")
    model = keras.Model([x, ids], [
        ops.take(x, np.array([0, -1, 2, -4]), axis=-1), ops.take(x, np.array([[2, 0], [1, 1]]),
                                                               axis=1),
        ops.take(x, np.array([4, -5, 9]), axis=2), ops.take(x, 1, axis=-2),
        ops.take(table, ids, axis=0), ops.take(table, ids - 3, axis=0), ops.take(table, ids),
        ops.take(x[0], np.array([[0, 11], [-1, 3], [12, -13]])),
        ops.take(x, ops.argmax(x[0], axis=-1), axis=2),
        ops.take_along_axis(x, ops.expand_dims(ops.argmin(x, axis=-1), -1), axis=-1),
        ops.take_along_axis(x, ops.cast(ops.ones_like(x[:, :2]), "int32") * 5 - 7, axis=1)],
        name="take")
    inputs = [np.random.default_rng(1).uniform(-1, 1, (2, 3, 4)).astype("float32"),
              np.array([[0, 5, 2, 1, 3], [4, 4, 0, 5, 2]], "int32")]
    assert_matches_keras(model, tmp_path, inputs=inputs)


def test_copies_zeros_fills_and_views(tmp_path):
    x = keras.Input((3, 4), name="x")
    v = keras.Input((4,), name="v")
    model = keras.Model([x, v], [
        ops.copy(x), ops.stop_gradient(x), ops.real(x), ops.conj(x), ops.conjugate(x),
        ops.imag(x), ops.ravel(x), ops.full_like(x, -2.5), ops.full_like(x, v[:, None, :]),
        ops.full((2, 3), ops.sum(v[0]))], name="copies")
    assert_matches_keras(model, tmp_path)


def test_view_between_float32_and_int32(tmp_path):
    x = keras.Input((3, 4), name="x")
    ids = keras.Input((3, 4), dtype="int32", name="ids")
    model = keras.Model([x, ids], [ops.view(x, "int32"), ops.view(ops.view(x, "int32"), "float32"),
                                   ops.view(ids, "float32") * 0.0 + ops.view(ids, "int32") * 0],
                        name="views")
    assert_matches_keras(model, tmp_path)


def test_operations_across_the_batch_are_refused_at_load(tmp_path):
    x = keras.Input((3, 4), name="x")
    for i, make in enumerate((lambda: ops.flipud(x), lambda: ops.roll(x, 1),
                              lambda: ops.moveaxis(x, 0, 1), lambda: ops.flip(x, axis=0),
                              lambda: ops.vstack([x, x]), lambda: ops.unstack(x, num=2)[0],
                              lambda: ops.take(x, np.array([0]), axis=0),
                              lambda: ops.broadcast_to(x[:, None], (2, 5, 3, 4)),
                              lambda: ops.diagflat(x), lambda: ops.append(x, x),
                              lambda: ops.meshgrid(x[:, 0, 0], x[:, 1, 1])[0],
                              lambda: ops.take(x, np.array([3, 1])),
                              lambda: ops.linspace(x[:, 0, 0], 1.0, 3))):
        model = keras.Model(x, make(), name=f"across_{i}")
        _refused(model, tmp_path, "batch")


def test_refused_operations_name_their_reason(tmp_path):
    x = keras.Input((3, 4), name="x")
    _refused(keras.Model(x, ops.empty_like(x), name="empty"), tmp_path, "(EmptyLike)",
             "unspecified")
    _refused(keras.Model(x, ops.size(x) + x, name="size"), tmp_path, "(Size)", "batch")
    _refused(keras.Model(x, [x * 2.0, ops.ndim(x)], name="ndim"), tmp_path, "(Ndim)", "shape")
    _refused(keras.Model(x, ops.view(x, "float16"), name="view16"), tmp_path, "(View)", "float16")
    ids = keras.Input((4,), dtype="int32", name="ids")
    _refused(keras.Model([x, ids], ops.take(x, ids, axis=1), name="take_both"), tmp_path,
             "(Take)", "batch")


def test_select_and_bool_tensors(tmp_path):
    x = keras.Input((3, 4), name="x")
    ids = keras.Input((3, 4), dtype="int32", name="ids")
    flags = x > 0.0
    model = keras.Model([x, ids], [
        ops.select([flags, x < -0.5], [x, x * 2.0], default=1.5),
        ops.select([ids > 4, ids < 2, ops.equal(ids, 3)], [ids, ids * 3, ids - 9]),
        ops.select([flags], [x]), ops.flip(flags, -1), ops.tril(flags),
        ops.take(flags, np.array([0, 7, -1]), axis=-1), ops.hstack([flags, ids > 5]),
        ops.full_like(flags, 3), ops.take_along_axis(flags, ops.zeros_like(ids) + 9, axis=1)],
        name="select")
    assert_matches_keras(model, tmp_path)


def test_spaces_and_vander_from_tensors(tmp_path):
    v = keras.Input((4,), name="v")
    pos = ops.abs(v) + 0.5
    model = keras.Model(v, [
        ops.linspace(v[:, 0], v[:, 1], 5, axis=-1), ops.linspace(v[:, :2], v[:, 2:], 4,
                                                                 endpoint=False, axis=1),
        ops.linspace(-1.0, v[:, 3], 3, axis=1),
        ops.logspace(v[:, 0], v[:, 1], 4, base=2.0, axis=-1),
        ops.logspace(v[0], v[1], 3), ops.geomspace(pos[:, 0], pos[:, 1], 6, axis=-1),
        ops.geomspace(-pos[0], -pos[1], 3, endpoint=False),
        ops.vander(v[0]), ops.vander(v[:, 1], 3, increasing=True), ops.vander(v[1], N=2)],
        name="spaces")
    assert_matches_keras(model, tmp_path)
    refused = keras.Model(v, ops.linspace(v[:, 0], v[:, 1], 3), name="space_across")
    _refused(refused, tmp_path, "(Linspace)", "batch")


def test_maps_serve_every_batch_size_and_repeated_calls(tmp_path):
    # One map per sample shape: batches of 2 and a last batch of 1, then calls that replay.
    x = keras.Input((3, 4), name="x")
    y = keras.Input((2, 4), name="y")
    model = keras.Model([x, y], [ops.rot90(x, axes=(1, 2)), ops.append(x, y, axis=1),
                                 ops.tril(ops.hstack([x, y]), -1), *ops.array_split(x, 2, 2),
                                 ops.take_along_axis(x, np.array([[[1], [0], [5]]]), axis=2),
                                 ops.ravel(x)],
                        name="batches")
    rng = np.random.default_rng(4)
    inputs = [rng.uniform(-1, 1, (5, 3, 4)).astype("float32"),
              rng.uniform(-1, 1, (5, 2, 4)).astype("float32")]
    expected = assert_matches_keras(model, tmp_path, inputs=inputs, batch_size=2)
    before = kg.memory().num_tensors
    with kg.load_model(os.path.join(str(tmp_path), "batches.keras")) as loaded:
        for batch_size in (3, 3, 5, 5):
            for actual, wanted in zip(loaded.predict(inputs, batch_size=batch_size, verbose=0),
                                      expected):
                np.testing.assert_allclose(actual, wanted, atol=1e-6)
    assert kg.memory().num_tensors == before        # the maps went with the model


def test_select_of_a_condition_that_is_not_bool_is_refused_at_load(tmp_path):
    x = keras.Input((3, 4), name="x")
    model = keras.Model(x, ops.select([ops.cast(x > 0.0, "int32")], [x]), name="select_int")
    _refused(model, tmp_path, "(Select)", "int32 tensor", "bool tensors only")


def test_axes_of_unknown_size(tmp_path):
    x = keras.Input((None, 4), name="x")
    model = keras.Model(x, [ops.flip(x, 1), ops.tril(x, 1), ops.roll(x, 1, axis=1),
                            ops.hstack([x, x * 2.0]), ops.swapaxes(x, 1, 2),
                            ops.take(x, np.array([0, -1]), axis=1)], name="unknown")
    assert_matches_keras(model, tmp_path)
    refused = keras.Model(x, ops.hsplit(x, 2)[0], name="unknown_split")
    _refused(refused, tmp_path, "(Hsplit)", "unknown sizes")


def test_full_like_of_another_dtype_is_refused_at_load(tmp_path):
    x = keras.Input((3, 4), name="x")
    model = keras.Model(x, ops.full_like(x, 2, dtype="int32"), name="full_like_int")
    _refused(model, tmp_path, "(FullLike)", "dtype='int32'")
