"""keras.ops elementwise maths, statistics and reductions beyond op_nodes_math.py
(keras_ops/numpy/elementwise_math.py, op_nodes_stats.py) against live Keras in both formats, including
the hard ranges (large arguments of the trigonometric and hyperbolic functions, erfinv near +-1,
tiny arguments, NaN and inf where Keras gives them); refusals at load."""
import os

import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg

ops = keras.ops
RNG = np.random.default_rng(11)


def _values(n, *pieces):
    """A float32 row of length n: the given edge values first, uniform [-1, 1) after."""
    edge = np.concatenate([np.asarray(p, "float32").ravel() for p in pieces]) if pieces else \
        np.zeros(0, "float32")
    rest = RNG.uniform(-1, 1, n - edge.size).astype("float32")
    return np.concatenate([edge, rest])


def test_trigonometric_and_hyperbolic(tmp_path):
    x = keras.Input((64,), name="x")
    unit = ops.clip(x, -1.0, 1.0)
    outs = [ops.sin(x), ops.cos(x), ops.tan(x), ops.arctan(x), ops.arcsin(unit), ops.arccos(unit),
            ops.sinh(x), ops.cosh(x), ops.arcsinh(x), ops.arccosh(ops.maximum(x, 1.0)),
            ops.arctanh(unit), ops.sinc(x)]
    model = keras.Model(x, outs, name="trig")
    big = [1e4, -12345.678, 3000.25, 1e5 - 3.0, 7.0 * np.pi, 88.0, 89.4, -89.0, 20.5, -30.0]
    tiny = [1e-20, -3e-8, 1e-4, 0.0, -0.0, 0.9999999, -0.9999, 0.5, -0.5, 0.50001, 1.0, -1.0,
            1.0000001, 1.001, 32767.9, 32768.0, -65536.5, 1.5e7]
    special = [np.nan, np.inf, -np.inf]
    values = np.stack([_values(64, big, tiny), _values(64, special, tiny, [1e30, -2e19, 5e18])])
    assert_matches_keras(model, tmp_path, inputs=[values])


def test_logarithms_and_special_functions(tmp_path):
    x = keras.Input((64,), name="x")
    positive = ops.abs(x)
    unit = ops.clip(x, -1.0, 1.0)
    outs = [ops.log10(positive), ops.log2(positive), ops.exp2(x), ops.cbrt(x), ops.trunc(x),
            ops.fabs(x), ops.deg2rad(x), ops.rad2deg(x), ops.erfc(x), ops.erfinv(unit), ops.i0(x),
            ops.nan_to_num(x), ops.nan_to_num(x, nan=-2.0, posinf=7.0, neginf=-9.0)]
    model = keras.Model(x, outs, name="special")
    edges = [0.0, 1e-30, 8.0, 1000.0, 3e38, -27.0, 2.5, -2.5, 3.75, 50.0, 88.7, 100.0, -7.3, 12.0]
    near_one = [0.9999999, -0.9999999, 0.99999, 0.999, -0.9, 0.7, 1.0, -1.0, 1e-7, -0.0]
    values = np.stack([_values(64, edges, near_one),
                       _values(64, [np.nan, np.inf, -np.inf, 200.0, -150.0, 127.5], near_one)])
    assert_matches_keras(model, tmp_path, inputs=[values])


def test_nn_activation_ops(tmp_path):
    x = keras.Input((6, 8), name="x")
    scaled = x * 3.0
    outs = [ops.log_sigmoid(scaled), ops.hard_tanh(scaled), ops.hard_shrink(x, 0.3),
            ops.soft_shrink(x, threshold=0.2), ops.tanh_shrink(scaled), ops.celu(scaled, alpha=0.7),
            ops.squareplus(scaled, b=2), ops.sparse_plus(scaled), ops.sparse_sigmoid(scaled),
            ops.threshold(x, 0.1, -5.0), ops.relu(ops.threshold(x, threshold=-0.2, default_value=2.0))]
    # After a Dense, the activation ops fuse into its kernel (with their parameters).
    dense = keras.layers.Dense(5)
    outs += [ops.celu(dense(x), alpha=0.5), ops.hard_shrink(keras.layers.Dense(4)(x), 0.25)]
    assert_matches_keras(keras.Model(x, outs, name="nn_acts"), tmp_path)


def test_binary_functions(tmp_path):
    a, b = keras.Input((4, 12), name="a"), keras.Input((4, 12), name="b")
    outs = [ops.arctan2(a, b), ops.hypot(a, b), ops.logaddexp(a, b), ops.logaddexp2(a, b),
            ops.fmod(a, b), ops.heaviside(a, b), ops.divide_no_nan(a, b), ops.fmax(a, b),
            ops.fmin(a, b), (ops.nextafter(a, b) - a) * 1e8, ops.arctan2(a, 0.5),
            ops.fmod(a * 10.0, 3.0), ops.logaddexp(a * 100.0, 2.0), ops.hypot(a, b * 1e-3),
            ops.divide_no_nan(3.0, b), ops.fmax(a, 0.5)]
    model = keras.Model([a, b], outs, name="binary")
    va = RNG.uniform(-2, 2, (2, 4, 12)).astype("float32")
    vb = RNG.uniform(-2, 2, (2, 4, 12)).astype("float32")
    # Signed zeros and infinities of arctan2, NaN handling of fmax / fmin / heaviside, zeros of
    # divide_no_nan and heaviside, equal arguments of nextafter.
    va[0, 0] = [0.0, 0.0, -0.0, -0.0, np.inf, -np.inf, np.inf, 1.0, np.nan, 1.0, 0.0, 0.75]
    vb[0, 0] = [0.0, -0.0, 0.0, -0.0, np.inf, np.inf, -np.inf, np.nan, 1.0, 0.0, 0.0, 0.75]
    va[0, 1, :4] = [1e30, -1e-30, 5.0, -7.5]
    vb[0, 1, :4] = [1e30, 1e-30, 0.5, 2.5]
    assert_matches_keras(model, tmp_path, inputs=[va, vb])


def test_float_mod_and_floor_divide(tmp_path):
    a, b = keras.Input((16,), name="a"), keras.Input((16,), name="b")
    outs = [ops.mod(a, b), ops.floor_divide(a, b), ops.mod(a, 0.75), ops.floor_divide(a, -3),
            a % b, a // b]
    model = keras.Model([a, b], outs, name="divmod")
    va = RNG.uniform(-1e8, 1e8, (2, 16)).astype("float32")
    vb = RNG.uniform(-3, 3, (2, 16)).astype("float32")
    # Ratios past 2^24 (the remainder is exact in jnp), x / y rounding up to an integer, zeros,
    # infinities and NaN.
    va[0] = [1e31, 7.0, -7.0, 0.3, 1.0, -1.0, 0.0, np.inf, np.nan, 5.0, -5.0, 3e38, 1e-30, 2.5, -2.5, 6.0]
    vb[0] = [3.0, 0.1, 0.1, 0.1, 0.0, 0.0, 0.0, 2.0, 1.0, np.inf, np.inf, 1e-3, 3.0, -0.5, 0.5, -0.0]
    assert_matches_keras(model, tmp_path, inputs=[va, vb])


def test_int32_arguments_compute_as_float(tmp_path):
    i, f = keras.Input((6,), dtype="int32", name="i"), keras.Input((6,), name="f")
    outs = [ops.sin(i), ops.exp2(i), ops.log2(i), ops.cbrt(i), ops.arctan2(i, f), ops.hypot(i, i),
            ops.logaddexp(i, f), ops.fmax(i, f), ops.fmod(f, i)]
    model = keras.Model([i, f], outs, name="int_args")
    ints = np.array([[1, 2, -3, 40, 0, 100000], [7, -8, 9, 1, 5, 6]], "int32")
    assert_matches_keras(model, tmp_path, inputs=[ints, RNG.uniform(-3, 3, (2, 6)).astype("float32")])


def test_ldexp(tmp_path):
    x, e = keras.Input((6,), name="x"), keras.Input((6,), dtype="int32", name="e")
    model = keras.Model([x, e], [ops.ldexp(x, e), ops.ldexp(x, 3)], name="ldexp")
    values = np.array([[1.5, -3.0, 0.1, 7.0, 1e-3, 2.0], [1.5e-38, 3e38, 1.0, -2.0, 0.0, 5.0]],
                      "float32")
    exps = np.array([[2, -3, 10, 0, 20, -5], [250, -240, 127, 200, 1000, -1000]], "int32")
    assert_matches_keras(model, tmp_path, inputs=[values, exps])


def _with_nans(shape, fraction=0.25, seed=3):
    rng = np.random.default_rng(seed)
    values = rng.uniform(-1, 1, shape).astype("float32")
    values[rng.uniform(size=shape) < fraction] = np.nan
    return values


def test_products_and_nan_reductions(tmp_path):
    x = keras.Input((4, 5, 3), name="x")
    outs = [ops.prod(x, axis=1), ops.prod(x * 2.0, axis=(1, 3), keepdims=True), ops.prod(x, axis=(1, 2, 3)),
            ops.nansum(x, axis=-1), ops.nansum(x, axis=(1, 2)), ops.nanmean(x, axis=1),
            ops.nanmean(x, axis=(1, 3), keepdims=True), ops.nanmax(x, axis=2), ops.nanmin(x, axis=(1, 2)),
            ops.nanprod(x, axis=-1), ops.nanvar(x, axis=1), ops.nanstd(x, axis=(1, 2), keepdims=True),
            ops.amax(x, axis=1), ops.amin(x, axis=(1, 3)), ops.ptp(x, axis=-1, keepdims=True),
            ops.nancumsum(x, axis=1), ops.nancumprod(x, axis=-1), ops.nancumsum(x)]
    model = keras.Model(x, outs, name="nan_reductions")
    values = _with_nans((2, 4, 5, 3))
    values[0, :, 0, :] = np.nan          # all-NaN slices along axis 1
    values[1, 0, 1, :] = np.nan          # ... and along the last axis
    assert_matches_keras(model, tmp_path, inputs=[values])


def test_counts_and_nan_argmax(tmp_path):
    x = keras.Input((4, 6), name="x")
    zeros = ops.where(ops.abs(x) < 0.4, 0.0, x)
    outs = [ops.count_nonzero(zeros, axis=(1, 2)), ops.count_nonzero(zeros, axis=1), ops.count_nonzero(x, axis=(0, 2)),
            ops.nanargmax(x, axis=1), ops.nanargmin(x, axis=-1), ops.nanargmax(x, axis=2),
            ops.nanargmin(x, axis=1, keepdims=True)]
    tokens = keras.Input((7,), dtype="int32", name="tokens")
    outs += [ops.count_nonzero(tokens, axis=1), ops.count_nonzero(tokens > 3, axis=-1)]
    model = keras.Model([x, tokens], outs, name="counts")
    values = _with_nans((2, 4, 6), seed=5)
    values[0, 0, :] = np.nan                 # all-NaN: -1
    values[1, :, 2] = np.nan
    ids = np.array([[5, 0, 0, 2, 9, 0, 1], [0, 0, 0, 0, 0, 0, 3]], "int32")
    assert_matches_keras(model, tmp_path, inputs=[values, ids])


def test_statistics(tmp_path):
    x, w = keras.Input((4, 6), name="x"), keras.Input((4, 6), name="w")
    mean, var = ops.moments(x, axes=[1, 2])
    mean_k, var_k = ops.moments(x * 5.0 + 3.0, axes=[2], keepdims=True)
    outs = [mean, var, mean_k, var_k, ops.average(x, axis=1),
            ops.average(x, axis=-1, weights=ops.abs(w) + 0.1), ops.average(x, axis=1, weights=w + 2.0),
            ops.average(x, axis=2, weights=np.linspace(0.5, 2.0, 6).astype("float32"))]
    assert_matches_keras(keras.Model([x, w], outs, name="stats"), tmp_path)


def test_differences_along_an_axis(tmp_path):
    x, y = keras.Input((5, 3), name="x"), keras.Input((5, 3), name="y")
    a2, b2 = keras.Input((4, 2), name="a2"), keras.Input((4, 2), name="b2")
    outs = [ops.diff(x), ops.diff(x, n=2, axis=1), ops.diff(x, n=3, axis=-2), ops.trapezoid(x),
            ops.trapezoid(x, dx=0.5, axis=1), ops.cross(x, y), ops.cross(a2, b2)]
    assert_matches_keras(keras.Model([x, y, a2, b2], outs, name="diffs"), tmp_path)


def test_normalize_sparsemax_glu(tmp_path):
    x = keras.Input((4, 6), name="x")
    outs = [ops.normalize(x), ops.normalize(x, axis=1, order=1), ops.normalize(x, order=3),
            ops.normalize(x * 1e-5, epsilon=1e-3), ops.normalize(x, axis=[1, 2]),
            ops.sparsemax(x * 3.0), ops.sparsemax(x, axis=1), ops.glu(x), ops.glu(x, axis=1)]
    values = RNG.uniform(-1, 1, (2, 4, 6)).astype("float32")
    values[0, 0] = [0.5, 0.5, 0.1, 0.5, -0.2, 0.1]        # ties, in the support and out of it
    values[0, 1] = [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    assert_matches_keras(keras.Model(x, outs, name="nn_stats"), tmp_path, inputs=[values])


def test_refused_at_load(tmp_path):
    x, c = keras.Input((4, 3), name="x"), keras.Input((3, 3), name="c")
    outs = [ops.corrcoef(x[:, :, 0]), ops.trapezoid(x, x=[0.0, 1.0, 3.0]),
            ops.cross(c, c, axisa=1, axisb=-1), ops.normalize(x, axis=(1, 2), order=1)]
    model = keras.Model([x, c], outs, name="refused")
    path = os.path.join(str(tmp_path), "refused.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    message = str(refused.value)
    for needle in ("Corrcoef", "samples of a batch", "sample positions x", "one axis for all",
                   "a matrix norm"):
        assert needle in message, message


def test_integer_results_are_refused_at_load(tmp_path):
    i = keras.Input((3,), dtype="int32", name="i")
    model = keras.Model(i, [ops.trunc(i), ops.fmax(i, i)], name="int_results")
    path = os.path.join(str(tmp_path), "int_results.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as refused:
        kg.load_model(path)
    assert "Keras keeps their integer dtype" in str(refused.value) and "Trunc" in str(refused.value)
