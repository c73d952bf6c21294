"""keras.ops that sort or rank, recorded as op nodes (keras_ops/numpy/sorting.py), against live
Keras: sort / argsort / top_k / argpartition (ties, NaN, -0, inf, int32), the quantile family
with every method, searchsorted / digitize; and the operations refused at load."""
import os

import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg

ops = keras.ops
NAN, INF = np.nan, np.inf


def _ties(shape, seed=0, nan=True):
    """Small integers (many ties), -0.0 next to 0.0, +-inf, and NaNs of both signs."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=shape).astype("float32") * 0.5
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 3, replace=False)] = -0.0
    flat[rng.choice(flat.size, 2, replace=False)] = [INF, -INF]
    if nan:
        flat[rng.choice(flat.size, 2, replace=False)] = [NAN, -NAN]
    return x


def test_sort_and_argsort(tmp_path):
    x = keras.Input((4, 6), name="x")
    model = keras.Model(x, [ops.sort(x), ops.sort(x, axis=1), ops.sort(x, axis=0),
                            ops.argsort(x), ops.argsort(x, axis=1), ops.argsort(x, axis=0),
                            ops.sort(x * 2.0, axis=-2)], name="sorts")
    assert_matches_keras(model, tmp_path, inputs=[_ties((3, 4, 6))])


def test_int32_sort_argsort_and_top_k(tmp_path):
    x = keras.Input((3, 7), dtype="int32", name="ids")
    values, indices = ops.top_k(x, 4)
    model = keras.Model(x, [ops.sort(x, axis=1), ops.argsort(x), values, indices,
                            ops.argpartition(x, 2)], name="int_sorts")
    ids = np.random.default_rng(3).integers(-4, 4, size=(2, 3, 7)).astype("int32")
    assert_matches_keras(model, tmp_path, inputs=[ids])


def test_bool_sort_argsort_and_top_k(tmp_path):
    x = keras.Input((6,), dtype="bool", name="flags")
    values, indices = ops.top_k(x, 3)
    model = keras.Model(x, [ops.sort(x), ops.argsort(x), values, indices], name="bool_sorts")
    flags = np.random.default_rng(7).integers(0, 2, size=(3, 6)).astype(bool)
    assert_matches_keras(model, tmp_path, inputs=[flags])


def test_in_top_k(tmp_path):
    targets = keras.Input((), dtype="int32", name="targets")
    predictions = keras.Input((5,), name="predictions")
    model = keras.Model([targets, predictions],
                        [ops.in_top_k(targets, predictions, 2),
                         ops.in_top_k(targets, predictions, 1)],
                        name="in_top_k")
    # Ties, a NaN prediction (the target's counts as -inf), negative and out-of-range targets.
    rows = np.array([[0.1, 0.5, 0.5, NAN, 0.9]] * 8, "float32")
    rows[7] = [0.3, 0.3, 0.3, 0.3, 0.3]
    ids = np.array([0, 1, 2, 3, 4, -1, 5, 2], "int32")
    assert_matches_keras(model, tmp_path, inputs=[ids, rows])


def test_top_k(tmp_path):
    x = keras.Input((3, 7), name="x")
    top3, at3 = ops.top_k(x, 3)
    all7, at7 = ops.top_k(x, 7, sorted=False)
    one, at1 = ops.top_k(ops.reshape(x, (-1, 21)), 1)
    model = keras.Model(x, [top3, at3, all7, at7, one, at1], name="top_k")
    assert_matches_keras(model, tmp_path, inputs=[_ties((2, 3, 7), seed=1)])


def test_argpartition(tmp_path):
    x = keras.Input((4, 6), name="x")
    model = keras.Model(x, [ops.argpartition(x, 2), ops.argpartition(x, 0, axis=1),
                            ops.argpartition(x, 5), ops.argpartition(x, -1, axis=0),
                            ops.argpartition(x, 3, axis=-2)], name="argpartition")
    assert_matches_keras(model, tmp_path, inputs=[_ties((3, 4, 6), seed=2)])


def test_median_quantile_percentile(tmp_path):
    x = keras.Input((4, 5), name="x")
    # Keras's Quantile computes the linear quantile whatever its method (its call drops it).
    outs = [ops.median(x, axis=-1), ops.median(x, axis=(1, 2), keepdims=True),
            ops.median(x, axis=1), ops.quantile(x, [0.1, 0.5, 0.9], axis=(1,)),
            ops.quantile(x, 0.3, axis=(2, 1), keepdims=True, method="lower"),
            ops.quantile(x, np.array([0.125, 0.75], "float32"), axis=(2,)),
            ops.quantile(x, [0.25], axis=(0,)),
            ops.percentile(x, np.array([12.5, 50.0, 90.0], "float32"), axis=2, method="nearest")]
    # 12.5 % of 5 values is halfway between two: nearest and midpoint are told apart there.
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        outs.append(ops.percentile(x, [12.5, 37.5, 50.0, 100.0], axis=-1, method=method))
        outs.append(ops.percentile(x, 62.5, axis=1, method=method, keepdims=True))
    values = _ties((2, 4, 5), seed=4, nan=False)
    values[1, 2, 3] = NAN                           # a NaN makes its rows' quantiles NaN
    assert_matches_keras(keras.Model(x, outs, name="quantiles"), tmp_path, inputs=[values])


def test_nan_skipping_quantiles(tmp_path):
    x = keras.Input((4, 5), name="x")
    outs = [ops.nanmedian(x, axis=-1), ops.nanmedian(x, axis=(1, 2), keepdims=True)]
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        outs.append(ops.nanquantile(x, [0.0, 0.125, 0.5, 1.0], axis=-1, method=method))
        outs.append(ops.nanpercentile(x, 37.5, axis=1, method=method, keepdims=True))
    values = _ties((2, 4, 5), seed=5)
    values[0, 1, :] = NAN                           # a row of NaNs only: NaN
    values[1, 2, 1:3] = NAN
    assert_matches_keras(keras.Model(x, outs, name="nanquantiles"), tmp_path, inputs=[values])


def test_int32_median(tmp_path):
    x = keras.Input((6,), dtype="int32", name="ids")
    model = keras.Model(x, [ops.median(x, axis=-1), ops.percentile(x, 40.0, axis=1),
                            ops.percentile(x, np.array([25, 75]), axis=1, method="higher")],
                        name="int_median")
    assert_matches_keras(model, tmp_path)


def test_searchsorted_and_digitize(tmp_path):
    x = keras.Input((3, 5), name="x")
    edges = np.array([-1.0, 0.0, 0.0, 0.5, 1.5], "float32")    # a float constant: a GPU tensor
    counts = np.array([-1, 0, 1, 1, 2])                          # integers: saved in the call
    outs = [ops.searchsorted(edges, x), ops.searchsorted(edges, x, side="right"),
            ops.searchsorted(counts, x, side="left"), ops.searchsorted(counts, x, side="right"),
            ops.searchsorted(np.array([1.0, -1.0, 0.5], "float32"), x),      # unsorted: jax's
            ops.digitize(x, edges), ops.digitize(x, edges[::-1].copy()),
            ops.digitize(x, counts), ops.digitize(x, np.array([2, 0, -1]))]
    values = _ties((2, 3, 5), seed=6)
    values[0, 0, :] = [-1.0, 0.0, -0.0, 1.5, 2.0]                # exactly on the edges
    assert_matches_keras(keras.Model(x, outs, name="search"), tmp_path, inputs=[values])


def _refused(tmp_path, model):
    path = os.path.join(str(tmp_path), f"{model.name}.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    return str(refused.value)


def test_value_dependent_shapes_are_refused_at_load(tmp_path):
    x = keras.Input((5,), name="x")
    ids = keras.Input((5,), dtype="int32", name="ids")
    flat = keras.Input((), name="flat")
    outs = [ops.unique(x), ops.nonzero(x)[0], ops.bincount(ids), ops.histogram(flat, bins=4)[0]]
    message = _refused(tmp_path, keras.Model([x, ids, flat], outs, name="value_shapes"))
    assert "Unique" in message and "Nonzero" in message and "Bincount" in message \
        and "Histogram" in message and "depends on the values" in message \
        and "batch axis" in message, message


def test_whole_batch_options_are_refused_at_load(tmp_path):
    x = keras.Input((4, 5), name="x")
    outs = [ops.sort(x, axis=None), ops.argsort(x, axis=None), ops.median(x),
            ops.percentile(x, 50.0), ops.argpartition(x, 1, axis=None)]
    message = _refused(tmp_path, keras.Model(x, outs, name="whole_batch"))
    assert "axis=None" in message and message.count("  - ") == 5, message
