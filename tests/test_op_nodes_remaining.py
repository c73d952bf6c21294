"""The last keras.ops families (keras_ops/numpy/bitwise.py, op_nodes_scatter.py): bitwise ops,
shifts, gcd / lcm, isclose, isin, angle / isreal of real tensors, saturate_cast, array,
unravel_index, cdist, and ops.image.resize's kernel methods (bicubic, lanczos3, lanczos5)
against live Keras; the refused ones refused at load, naming why."""
import os

import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg

ops = keras.ops


def _ints(rng, shape, low, high):
    return rng.integers(low, high, size=shape).astype("int32")


def test_bitwise_shifts_gcd_lcm(tmp_path):
    i = keras.Input((12,), dtype="int32", name="i")
    j = keras.Input((12,), dtype="int32", name="j")
    b = keras.Input((12,), dtype="bool", name="b")
    c = keras.Input((12,), dtype="bool", name="c")
    outputs = [ops.bitwise_and(i, j), ops.bitwise_or(i, b), ops.bitwise_xor(b, c),
               ops.bitwise_and(b, c), ops.bitwise_invert(i), ops.bitwise_not(b),
               ops.bitwise_left_shift(i, j), ops.left_shift(i, 3),
               ops.bitwise_right_shift(i, j), ops.right_shift(i, 2),
               ops.gcd(i, j), ops.lcm(i, j), ops.gcd(i, 6),
               ops.bitwise_xor(ops.reshape(i, (-1, 3, 4)), ops.reshape(j, (-1, 3, 4))[:, :, :1])]
    model = keras.Model([i, j, b, c], outputs, name="bitwise")
    rng = np.random.default_rng(3)
    x1 = _ints(rng, (3, 12), -60, 60)
    x1[0, :3] = [0, 2 ** 31 - 1, -1]        # (jnp.gcd of -2**31 never ends)
    x2 = _ints(rng, (3, 12), -3, 40)
    x2[1, :3] = [0, 32, -1]
    inputs = [x1, x2, rng.random((3, 12)) < 0.5, rng.random((3, 12)) < 0.5]
    assert_matches_keras(model, tmp_path, inputs=inputs, atol=0, rtol=0)


def test_isclose_angle_isreal_casts(tmp_path):
    x = keras.Input((8,), name="x")
    y = keras.Input((8,), name="y")
    i = keras.Input((8,), dtype="int32", name="i")
    # isclose's own options under test (not a comparison tolerance: outputs are compared exactly).
    isclose_options = {"rtol": 0.1, "atol": 0.01, "equal_nan": True}
    outputs = [ops.isclose(x, y), ops.isclose(x, y, **isclose_options),
               ops.isclose(i, x), ops.angle(x), ops.angle(i), ops.isreal(x), ops.isreal(i),
               ops.saturate_cast(x * 1e10, "int32"), ops.saturate_cast(x, "bool"),
               ops.saturate_cast(x, "float32"), ops.saturate_cast(i, "bool"),
               ops.saturate_cast(i, "int32"),
               ops.array(x, dtype="int32"), ops.array(i) + 1]
    model = keras.Model([x, y, i], outputs, name="isclose_casts")
    rng = np.random.default_rng(4)
    a = rng.uniform(-3, 3, (3, 8)).astype("float32")
    noise = rng.choice([0.0, 1e-9, 1e-3, 0.05, 1.0], size=(3, 8)).astype("float32")
    b = a + noise
    a[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan]
    b[0, :6] = [np.nan, np.inf, np.inf, 0.0, -0.0, 1.0]
    inputs = [a, b, _ints(rng, (3, 8), -5, 5)]
    assert_matches_keras(model, tmp_path, inputs=inputs, atol=0, rtol=0)


def test_isin_unravel_index_cdist(tmp_path):
    x = keras.Input((6,), name="x")
    i = keras.Input((6,), dtype="int32", name="i")
    p = keras.Input((3, 4), name="p")
    q = keras.Input((5, 4), name="q")
    outputs = [ops.isin(i, np.array([1, 3, 5], "int32")),
               ops.isin(i, np.array([1, 3, 5], "int32"), invert=True),
               ops.isin(x, np.array([0.5, -1.0], "float32")),
               ops.isin(x, np.array([[2.0], [0.25]], "float32"), invert=True),
               *ops.unravel_index(i, (2, 3)), ops.unravel_index(i, (7,))[0],
               ops.cdist(p, q), ops.cdist(p, p)]
    model = keras.Model([x, i, p, q], outputs, name="isin_unravel_cdist")
    rng = np.random.default_rng(5)
    a = rng.choice([0.5, -1.0, 0.25, 2.0], size=(2, 6)).astype("float32")
    ids = _ints(rng, (2, 6), -9, 9)
    inputs = [a, ids, rng.uniform(-1, 1, (2, 3, 4)).astype("float32"),
              rng.uniform(-1, 1, (2, 5, 4)).astype("float32")]
    assert_matches_keras(model, tmp_path, inputs=inputs)


def test_image_resize_kernel_methods(tmp_path):
    """ops.image.resize with jax's Keys cubic and Lanczos kernels (the Resizing layer's cases
    are in test_layers_image_preprocessing.py): down, up, antialiased, cropped, padded,
    channels_first, one image dimension unknown until predict (tables made at the first call)."""
    resize = keras.ops.image.resize
    x = keras.Input((None, 11, 4), name="x")
    outputs = [resize(x, (5, 4), interpolation="bicubic"),
               resize(x, (5, 4), interpolation="lanczos3", antialias=True),
               resize(x, (16, 13), interpolation="lanczos5"),
               resize(x, (3, 6), interpolation="bicubic", antialias=True,
                      crop_to_aspect_ratio=True),
               resize(x, (6, 3), interpolation="lanczos5", antialias=True,
                      pad_to_aspect_ratio=True, fill_value=2.0),
               resize(ops.transpose(x, (0, 3, 1, 2)), (4, 7), interpolation="lanczos3",
                      data_format="channels_first")]
    model = keras.Model(x, outputs, name="resize_kernels")
    images = np.random.default_rng(8).uniform(-1, 1, (2, 9, 11, 4)).astype("float32")
    assert_matches_keras(model, tmp_path, inputs=[images])


def _refused(model, tmp_path, *words):
    path = os.path.join(str(tmp_path), f"{model.name}.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    for word in words:
        assert word in str(refused.value), str(refused.value)


@pytest.mark.parametrize("make,words", [
    (lambda x, i: ops.allclose(x, x), ("AllClose", "batch")),
    (lambda x, i: ops.polar(x, x), ("Polar", "complex")),
    (lambda x, i: ops.map(lambda v: v * 2.0, x), ("Map", "Python function")),
    (lambda x, i: ops.vectorized_map(lambda v: v * 2.0, x), ("VectorizedMap", "Python function")),
    (lambda x, i: ops.segment_sum(x, i[:, 0], num_segments=3), ("SegmentSum", "batch")),
    (lambda x, i: ops.scatter_update(x, [[0, 1]], [1.0]), ("ScatterUpdate", "batch")),
    (lambda x, i: ops.saturate_cast(x, "uint8"), ("SaturateCast", "uint8")),
    (lambda x, i: ops.saturate_cast(i, "float32"), ("SaturateCast", "overflows")),
    (lambda x, i: ops.bitwise_and(i, ops.cast(x, "int32")) + ops.gcd(x, x), ("Gcd", "float32")),
    (lambda x, i: ops.isin(x, x), ("IsIn", "batch")),
])
def test_refused_at_load(tmp_path, make, words):
    x = keras.Input((4,), name="x")
    i = keras.Input((4,), dtype="int32", name="i")
    _refused(keras.Model([x, i], make(x, i), name="refused"), tmp_path, *words)


@pytest.mark.parametrize("options", [
    dict(kernel_size=2),
    dict(kernel_size=(3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1)),
    dict(kernel_size=1, stride=3, padding=2),
])
def test_unfold_and_fold(tmp_path, options):
    x = keras.Input((2, 5, 6), name="x")
    cols = ops.unfold(x, **options)
    model = keras.Model(x, [cols, ops.fold(cols, output_size=(5, 6), **options)],
                        name="unfold_fold")
    assert_matches_keras(model, tmp_path)


def test_slice_update_per_sample(tmp_path):
    x = keras.Input((4, 5), name="x")
    u = keras.Input((2, 3), name="u")
    i = keras.Input((3, 4), dtype="int32", name="i")
    j = keras.Input((1, 2), dtype="int32", name="j")
    model = keras.Model([x, u, i, j], [ops.slice_update(x, (0, 3, 1), u),
                                       ops.slice_update(x, (0, 0, 0), u * 2.0),
                                       ops.slice_update(i, (0, 1, 7), j)], name="slice_update")
    assert_matches_keras(model, tmp_path)
    x = keras.Input((4,), name="x")
    _refused(keras.Model(x, ops.slice_update(x, (1, 0), x[:1, :2]), name="refused_slice"),
             tmp_path, "SliceUpdate", "batch")


@pytest.mark.parametrize("cell,states", [
    (lambda: keras.layers.SimpleRNNCell(4, activation="relu"), 1),
    (lambda: keras.layers.LSTMCell(4, unit_forget_bias=False), 2),
    (lambda: keras.layers.GRUCell(4, reset_after=False), 1),
    (lambda: keras.layers.GRUCell(4), 0),
    (lambda: keras.layers.StackedRNNCells([keras.layers.LSTMCell(5), keras.layers.GRUCell(4)]),
     3),
])
def test_standalone_cells(tmp_path, cell, states):
    x = keras.Input((3,), name="x")
    given = [keras.Input((5 if states == 3 and k < 2 else 4,), name=f"s{k}")
             for k in range(states)]
    layer = cell()
    if states == 3:
        out, new = layer(x, [given[:2], given[2:]])
        new = [t for group in new for t in group]
    elif given:
        out, new = layer(x, given)
    else:
        out, new = layer(x, [ops.zeros_like(ops.matmul(x, ops.zeros((3, 4))))])
    model = keras.Model([x] + given, [out] + list(new), name="cell")
    assert_matches_keras(model, tmp_path)
