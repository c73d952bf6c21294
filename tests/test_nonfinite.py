"""NaN and infinity against Keras 3: where Keras gives NaN or +-inf, kerasgl gives the same, and a
NaN never turns into a finite number (GLSL's max/min/clamp leave NaN operands undefined; the
shaders test isnan where Keras's math propagates it).

Activations (layers, fused epilogues of Dense/Conv2D/DepthwiseConv2D), ReLU / LeakyReLU / ELU
with NaN or infinite parameters (Keras accepts them and computes with them), PReLU, max pooling
with a NaN in a window, softmax of rows holding inf, LayerNormalization of rows whose variance
overflows float32 and with epsilon NaN / -1, kernels of +inf, merges, reductions, recurrent
layers and attention with NaN inputs. Every expected value comes from Keras."""
import os

import numpy as np
import pytest
from keras_ref import keras

import kerasgl as kg

L = keras.layers
NAN, INF = float("nan"), float("inf")
# Every kind of float32 value an activation can meet: NaN, +-inf, near float32's maximum, +-0,
# tiny, and values on each side of the usual thresholds and clip points.
SPECIAL = np.array([NAN, INF, -INF, 3.4e38, -3.4e38, 0.0, -0.0, 1.0, -1.0, 1e-30, 100.0, -100.0,
                    7.0, -7.0, 0.3, 88.0, -88.0, 1e20, -1e20], np.float32)
POINTWISE = ["linear", "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "sigmoid",
             "hard_sigmoid", "hard_silu", "silu", "softplus", "softsign", "tanh", "exponential",
             "mish", "celu", "squareplus", "soft_shrink", "hard_shrink", "sparse_plus",
             "sparse_sigmoid", "tanh_shrink", "hard_tanh", "log_sigmoid"]


def keras_and_kerasgl(model, x, tmp_path, fmt=".keras"):
    """(kerasgl's outputs, Keras's outputs) as lists of arrays, for the model saved as `fmt`."""
    expected = model.predict(x, verbose=0)
    path = os.path.join(str(tmp_path), f"{model.name}{fmt}")
    model.save(path)
    with kg.load_model(path) as loaded:
        actual = loaded.predict(x, verbose=0)
    as_list = (lambda v: list(v) if isinstance(v, (list, tuple)) else [v])
    return as_list(actual), as_list(expected)


def assert_nonfinite_match(model, x, tmp_path, fmt=".keras", must_be_nonfinite=True):
    """kerasgl == Keras, NaN where Keras has NaN and the same infinities; with
    must_be_nonfinite, Keras's output holds a NaN or inf (the case tests what it means to)."""
    actual, expected = keras_and_kerasgl(model, x, tmp_path, fmt)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape
        what = f"{model.name}{fmt} output {i}: kerasgl {a.ravel()[:24]}, Keras {e.ravel()[:24]}"
        np.testing.assert_array_equal(np.isnan(a), np.isnan(e), err_msg="NaN positions; " + what)
        np.testing.assert_array_equal(np.isposinf(a), np.isposinf(e), err_msg="+inf; " + what)
        np.testing.assert_array_equal(np.isneginf(a), np.isneginf(e), err_msg="-inf; " + what)
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4, equal_nan=True, err_msg=what)
    if must_be_nonfinite:
        assert any(not np.all(np.isfinite(e)) for e in expected), "Keras's output is all finite"
    return actual


def special_rows():
    return SPECIAL.reshape(1, -1)


def dense_of_bias(activation, values=SPECIAL):
    """A Dense whose outputs are exactly `values` before its activation (kernel 0, bias =
    values): the activation in the matmul epilogue meets each special value."""
    model = keras.Sequential([keras.Input((1,)), L.Dense(len(values), activation=activation)],
                             name=f"dense_bias_{activation}")
    model.layers[0].set_weights([np.zeros((1, len(values)), np.float32), values])
    return model


# -------------------------------------------------------------------------------------------------
# Activations
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", POINTWISE)
def test_activation_of_special_values(name, tmp_path):
    model = keras.Sequential([keras.Input((SPECIAL.size,)), L.Activation(name)], name=f"act_{name}")
    assert_nonfinite_match(model, special_rows(), tmp_path)
    assert_nonfinite_match(dense_of_bias(name), np.ones((1, 1), np.float32), tmp_path)


@pytest.mark.parametrize("name", ["relu", "relu6", "hard_sigmoid", "celu", "hard_tanh"])
def test_clipping_activations_keep_nan(name, tmp_path):
    """The ones written with max/min/clamp: NaN in, NaN out (Keras: jnp.maximum propagates it)."""
    model = keras.Sequential([keras.Input((3,)), L.Activation(name)], name=f"nan_{name}")
    out = assert_nonfinite_match(model, np.array([[NAN, 1.0, -1.0]], np.float32), tmp_path)[0]
    assert np.isnan(out[0, 0]) and np.all(np.isfinite(out[0, 1:]))


RELU_OPTIONS = [
    dict(max_value=NAN), dict(negative_slope=NAN), dict(threshold=NAN), dict(max_value=INF),
    dict(negative_slope=INF), dict(threshold=INF), dict(max_value=2.0, negative_slope=NAN),
    dict(max_value=NAN, threshold=1.0), dict(max_value=6.0), dict(max_value=2.0),
    dict(threshold=1.0), dict(negative_slope=0.1), dict(max_value=0.0),
    dict(max_value=2.0, threshold=0.5, negative_slope=0.3)]

def assert_match_or_refused(model, x, tmp_path, refused: bool, **kwargs):
    """Where a convolution's GPU kernel clamps with min/max (Layer.drops_nan), kerasgl refuses
    non-finite inputs instead of answering with numbers where Keras gives NaN
    (docs/limitations.md); elsewhere it matches Keras's NaN and infinities."""
    if not refused:
        return assert_nonfinite_match(model, x, tmp_path, **kwargs)
    path = os.path.join(str(tmp_path), f"{model.name}.keras")
    model.save(path)
    assert not np.all(np.isfinite(x))
    with kg.load_model(path) as loaded:
        with pytest.raises(kg.InputValueError, match="docs/limitations.md") as caught:
            loaded.predict(x, verbose=0)
        assert "NaN or infinite" in str(caught.value) and model.layers[0].name in str(caught.value)
        finite = np.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0)
        np.testing.assert_allclose(loaded.predict(finite, verbose=0),
                                   model.predict(finite, verbose=0), rtol=1e-4, atol=1e-4)
    return None


def assert_weights_refused(model, tmp_path):
    """Non-finite weights in a convolution whose kernel drops NaN: refused at load, naming the
    file, the layer and docs/limitations.md."""
    path = os.path.join(str(tmp_path), f"{model.name}.keras")
    model.save(path)
    before = kg.memory()
    with pytest.raises(kg.UnsupportedLayerError, match="docs/limitations.md") as caught:
        kg.load_model(path)
    message = str(caught.value)
    assert path in message and model.layers[0].name in message and "NaN or infinite" in message
    after = kg.memory()          # the failed load freed what it had uploaded
    assert (after.num_bytes_in_gpu, after.num_tensors) == (before.num_bytes_in_gpu, before.num_tensors)



@pytest.mark.parametrize("kwargs", RELU_OPTIONS, ids=[str(k) for k in RELU_OPTIONS])
def test_relu_layer_with_nonfinite_options(kwargs, tmp_path):
    """Keras accepts NaN and inf options (NaN < 0 is False) and computes with them: its branches
    (slope != 0, threshold != 0, max_value given) decide the formula, as they do in kerasgl."""
    model = keras.Sequential([keras.Input((SPECIAL.size,)), L.ReLU(**kwargs)], name="relu_opts")
    for fmt in (".keras", ".h5"):     # (a NaN threshold: every output 0, in Keras too)
        assert_nonfinite_match(model, special_rows(), tmp_path, fmt, must_be_nonfinite=False)


@pytest.mark.parametrize("kwargs", RELU_OPTIONS[:8], ids=[str(k) for k in RELU_OPTIONS[:8]])
def test_relu_options_fused_into_dense_and_convolutions(kwargs, tmp_path):
    """ReLU after Dense / Conv2D / DepthwiseConv2D runs in their epilogues (conv: as a clamp
    between uniform bounds where it is one)."""
    dense = keras.Sequential([keras.Input((1,)), L.Dense(SPECIAL.size), L.ReLU(**kwargs)],
                             name="dense_relu")
    dense.layers[0].set_weights([np.zeros((1, SPECIAL.size), np.float32), SPECIAL])
    assert_nonfinite_match(dense, np.ones((1, 1), np.float32), tmp_path, must_be_nonfinite=False)
    images = nan_images()
    conv = keras.Sequential([keras.Input(images.shape[1:]), L.Conv2D(8, 1), L.ReLU(**kwargs)],
                            name="conv_relu")
    # ReLU(max_value=inf) is a clamp between 0 and inf, run in the convolution kernel.
    clamp = kwargs == dict(max_value=INF)
    assert_match_or_refused(conv, images, tmp_path, clamp, must_be_nonfinite=False)
    depthwise = keras.Sequential([keras.Input(images.shape[1:]),
                                  L.DepthwiseConv2D(3, padding="same"), L.ReLU(**kwargs)],
                                 name="dw_relu")
    assert_match_or_refused(depthwise, images, tmp_path, clamp, must_be_nonfinite=False)


@pytest.mark.parametrize("layer", [
    lambda: L.LeakyReLU(negative_slope=NAN), lambda: L.LeakyReLU(negative_slope=INF),
    lambda: L.ELU(alpha=NAN), lambda: L.ELU(alpha=INF), lambda: L.ELU(alpha=-1.0)],
    ids=["leaky_nan", "leaky_inf", "elu_nan", "elu_inf", "elu_negative"])
def test_activation_layers_with_nonfinite_parameters(layer, tmp_path):
    model = keras.Sequential([keras.Input((SPECIAL.size,)), layer()], name="act_param")
    assert_nonfinite_match(model, special_rows(), tmp_path)


@pytest.mark.parametrize("alpha", [0.25, NAN, INF])
def test_prelu_of_special_values(alpha, tmp_path):
    model = keras.Sequential([keras.Input((SPECIAL.size,)), L.PReLU()], name="prelu")
    model.layers[0].set_weights([np.full((SPECIAL.size,), alpha, np.float32)])
    assert_nonfinite_match(model, special_rows(), tmp_path)


# -------------------------------------------------------------------------------------------------
# Pooling
# -------------------------------------------------------------------------------------------------
def nan_images(channels=8, size=6, seed=0):
    """Images with a NaN pixel (every channel), a NaN in one channel, +inf, -inf and values near
    float32's maximum: each pooling window meets one kind."""
    x = np.random.default_rng(seed).uniform(-1, 1, (2, size, size, channels)).astype(np.float32)
    x[0, 0, 0, :] = NAN
    x[0, 1, 2, 1 % channels] = INF
    x[1, 3, 3, 2 % channels] = -INF
    x[1, 2, 2, 0] = 3.4e38
    x[1, 4, 1, 1 % channels] = NAN
    return x


@pytest.mark.parametrize("channels", [3, 8])     # scalar and vec4 kernels
@pytest.mark.parametrize("make", [
    lambda: L.MaxPooling2D(2), lambda: L.MaxPooling2D(3, strides=1, padding="same"),
    lambda: L.AveragePooling2D(2), lambda: L.AveragePooling2D(3, strides=1, padding="same"),
    lambda: L.GlobalMaxPooling2D(), lambda: L.GlobalAveragePooling2D()],
    ids=["max2", "max3_same", "avg2", "avg3_same", "global_max", "global_avg"])
def test_pooling2d_with_nan_and_inf(make, channels, tmp_path):
    images = nan_images(channels)
    model = keras.Sequential([keras.Input(images.shape[1:]), make()], name="pool2d")
    assert_nonfinite_match(model, images, tmp_path)


def test_max_pooling_of_a_nan_window_is_nan(tmp_path):
    x = np.ones((1, 4, 4, 1), np.float32)
    x[0, 0, 0, 0] = NAN                       # the first cell of the first window
    x[0, 3, 3, 0] = NAN                       # the last cell of the last window
    model = keras.Sequential([keras.Input((4, 4, 1)), L.MaxPooling2D(2)], name="nan_window")
    out = assert_nonfinite_match(model, x, tmp_path)[0]
    assert np.isnan(out[0, 0, 0, 0]) and np.isnan(out[0, 1, 1, 0]) and out[0, 0, 1, 0] == 1.0


def test_pooling1d_3d_and_fused_zero_padding_with_nan(tmp_path):
    images = nan_images(8)
    sequences = images.reshape(2, 36, 8)
    for layer, x in [(L.MaxPooling1D(2), sequences), (L.GlobalMaxPooling1D(), sequences),
                     (L.AveragePooling1D(2), sequences)]:
        model = keras.Sequential([keras.Input(x.shape[1:]), layer], name="pool1d")
        assert_nonfinite_match(model, x, tmp_path)
    padded = keras.Sequential([keras.Input(images.shape[1:]), L.ZeroPadding2D(1),
                               L.MaxPooling2D(2)], name="zero_pad_max")
    assert_nonfinite_match(padded, images, tmp_path)
    volumes = np.random.default_rng(0).uniform(-1, 1, (1, 4, 4, 4, 2)).astype(np.float32)
    volumes[0, 0, 0, 0, 0], volumes[0, 3, 3, 3, 1] = NAN, INF
    for layer in (L.MaxPooling3D(2), L.GlobalMaxPooling3D()):
        model = keras.Sequential([keras.Input(volumes.shape[1:]), layer], name="pool3d")
        assert_nonfinite_match(model, volumes, tmp_path)


def test_convolution_fused_with_max_pooling_refuses_nonfinite_inputs(tmp_path):
    """Conv2D + ReLU + MaxPooling2D run as one kernel that clamps and pools with min/max: a NaN
    or an infinity in the input is refused (docs/limitations.md), finite inputs match."""
    images = np.random.default_rng(0).uniform(-1, 1, (2, 6, 6, 8)).astype(np.float32)
    images[0, 0, 0, :] = NAN
    images[1, 4, 1, 3] = INF
    model = keras.Sequential([keras.Input((6, 6, 8)), L.Conv2D(8, 3, padding="same",
                                                               activation="relu"),
                              L.MaxPooling2D(2)], name="conv_pool")
    assert_match_or_refused(model, images, tmp_path, refused=True)


def test_convolution_with_a_nan_keeping_activation_takes_nonfinite_inputs(tmp_path):
    """A convolution whose activation is not a clamp (tanh) runs the NaN-keeping activations:
    NaN and infinite inputs are taken and give Keras's NaN and infinities."""
    images = np.random.default_rng(0).uniform(-1, 1, (1, 6, 6, 8)).astype(np.float32)
    images[0, 1, 2, 1] = INF
    images[0, 4, 4, 0] = NAN
    model = keras.Sequential([keras.Input((6, 6, 8)), L.Conv2D(8, 3, padding="same",
                                                               activation="tanh")],
                             name="conv_tanh_inf")
    assert_nonfinite_match(model, images, tmp_path)


# -------------------------------------------------------------------------------------------------
# Softmax, normalisations
# -------------------------------------------------------------------------------------------------
SOFTMAX_ROWS = np.array([[1, 2, 3, 4], [INF, 1, 2, 3], [-INF, 1, 2, 3], [NAN, 1, 2, 3],
                         [-INF] * 4, [INF, INF, 1, 2], [3.4e38, 3.4e38, 1, 0],
                         [-3.4e38, 3.4e38, 0, 1]], np.float32)


@pytest.mark.parametrize("layer", [lambda: L.Softmax(), lambda: L.Activation("softmax"),
                                   lambda: L.Activation("log_softmax")],
                         ids=["Softmax", "softmax", "log_softmax"])
def test_softmax_of_rows_with_inf_and_nan(layer, tmp_path):
    model = keras.Sequential([keras.Input((4,)), layer()], name="softmax_rows")
    assert_nonfinite_match(model, SOFTMAX_ROWS, tmp_path)


def test_log_softmax_next_to_a_huge_maximum(tmp_path):
    """(x - max) - log(sum) as jax computes it: max + log(sum) would round log(2) away."""
    model = keras.Sequential([keras.Input((4,)), L.Activation("log_softmax")], name="log_softmax")
    out = assert_nonfinite_match(model, np.array([[3.4e38, 3.4e38, 1, 0]], np.float32), tmp_path,
                                 must_be_nonfinite=False)[0]
    np.testing.assert_allclose(out[0, :2], -np.log(2), rtol=1e-6)


def test_softmax_fused_into_dense(tmp_path):
    model = keras.Sequential([keras.Input((4,)), L.Dense(4, activation="softmax")], name="d_soft")
    model.layers[0].set_weights([np.eye(4, dtype=np.float32), np.zeros(4, np.float32)])
    assert_nonfinite_match(model, SOFTMAX_ROWS, tmp_path)


LAYER_NORM_ROWS = np.array([[1, 2, 3, 4], [3e38, -3e38, 1, 2], [2e19, 2e19, 1, 2],
                            [1e19, -1e19, 0, 0], [INF, 1, 2, 3], [NAN, 1, 2, 3], [5, 5, 5, 5]],
                           np.float32)


@pytest.mark.parametrize("kwargs", [dict(), dict(epsilon=NAN), dict(epsilon=-1.0),
                                    dict(epsilon=INF), dict(epsilon=0.0), dict(rms_scaling=True),
                                    dict(center=False, scale=False)],
                         ids=["default", "eps_nan", "eps_-1", "eps_inf", "eps_0", "rms", "plain"])
def test_layer_normalization_overflow_and_odd_epsilon(kwargs, tmp_path):
    """A variance that overflows float32 (squared deviations of 1e19 and more) is inf in Keras
    (rsqrt: 0); epsilon NaN or -1 is accepted by Keras and gives NaN or inf where it does."""
    model = keras.Sequential([keras.Input((4,)), L.LayerNormalization(**kwargs)], name="ln")
    for fmt in (".keras", ".h5"):
        assert_nonfinite_match(model, LAYER_NORM_ROWS, tmp_path, fmt)


@pytest.mark.parametrize("epsilon", [NAN, -1.0, 1e-3])
def test_batch_normalization_odd_epsilon(epsilon, tmp_path):
    model = keras.Sequential([keras.Input((4,)), L.BatchNormalization(epsilon=epsilon)], name="bn")
    with np.errstate(all="ignore"):
        assert_nonfinite_match(model, LAYER_NORM_ROWS, tmp_path)


# -------------------------------------------------------------------------------------------------
# Kernels of +inf, inputs near float32's maximum
# -------------------------------------------------------------------------------------------------
def test_dense_with_an_infinite_kernel(tmp_path):
    """inf * 1 + inf * -1 = NaN; relu(NaN) is NaN in Keras, not 0."""
    model = keras.Sequential([keras.Input((4,)), L.Dense(3, activation="relu")], name="inf_dense")
    model.layers[0].set_weights([np.full((4, 3), INF, np.float32), np.zeros(3, np.float32)])
    x = np.array([[1, -1, 0, 0], [1, 2, 3, 4], [-1, -2, -3, -4], [0, 0, 0, 0]], np.float32)
    out = assert_nonfinite_match(model, x, tmp_path)[0]
    assert np.all(np.isnan(out[0])) and np.all(np.isnan(out[3]))


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_convolutions_with_infinite_kernels(padding, tmp_path):
    """Padded cells are zeros that multiply the kernel in Keras too: 0 * inf = NaN there. Where
    the kernel clamps with min/max (ReLU6, linear) such weights are refused at load; with a
    NaN-keeping activation (tanh) they run and match Keras."""
    ones = np.ones((1, 6, 6, 4), np.float32)
    conv = keras.Sequential([keras.Input((6, 6, 4)), L.Conv2D(4, 3, padding=padding,
                                                              activation="relu6")], name="inf_c")
    conv.layers[0].set_weights([np.full((3, 3, 4, 4), INF, np.float32), np.zeros(4, np.float32)])
    assert_weights_refused(conv, tmp_path)
    depthwise = keras.Sequential([keras.Input((6, 6, 4)), L.DepthwiseConv2D(3, padding=padding)],
                                 name="inf_dw")
    depthwise.layers[0].set_weights([np.full((3, 3, 4, 1), INF, np.float32),
                                     np.zeros(4, np.float32)])
    assert_weights_refused(depthwise, tmp_path)
    tanh = keras.Sequential([keras.Input((6, 6, 4)), L.Conv2D(4, 3, padding=padding,
                                                              activation="tanh")], name="inf_t")
    tanh.layers[0].set_weights([np.full((3, 3, 4, 4), INF, np.float32), np.zeros(4, np.float32)])
    assert_nonfinite_match(tanh, ones, tmp_path, must_be_nonfinite=False)


def test_inputs_near_float32_maximum_overflow_to_inf(tmp_path):
    model = keras.Sequential([keras.Input((4,)), L.Dense(2, activation="relu")], name="overflow")
    model.layers[0].set_weights([np.array([[1, -1]] * 4, np.float32), np.zeros(2, np.float32)])
    out = assert_nonfinite_match(model, np.full((1, 4), 3e38, np.float32), tmp_path)[0]
    assert out[0, 0] == INF and out[0, 1] == 0.0


def test_mobilenet_block_with_nan_input(tmp_path):
    """Conv + BatchNorm + ReLU6 (folded and fused at load), depthwise, global average: a NaN
    input is refused (the fused kernels clamp with min/max), finite inputs match."""
    images = nan_images(8)
    model = keras.Sequential([keras.Input(images.shape[1:]), L.Conv2D(8, 1), L.BatchNormalization(),
                              L.ReLU(6.0), L.DepthwiseConv2D(3, padding="same"),
                              L.BatchNormalization(), L.ReLU(6.0), L.GlobalAveragePooling2D()],
                             name="mobilenet_block")
    assert_match_or_refused(model, images, tmp_path, refused=True)


# -------------------------------------------------------------------------------------------------
# Merges, reductions, recurrent layers, attention
# -------------------------------------------------------------------------------------------------
def test_maximum_and_minimum_merges_propagate_nan(tmp_path):
    a, b = keras.Input((8,)), keras.Input((8,))
    model = keras.Model([a, b], [L.Maximum()([a, b]), L.Minimum()([a, b])], name="max_min")
    xa = np.array([[NAN, 1, 2, INF, -INF, 0, NAN, 5]], np.float32)
    xb = np.array([[1, NAN, 3, 1, 1, NAN, NAN, -INF]], np.float32)
    assert_nonfinite_match(model, [xa, xb], tmp_path)


def test_reductions_overflow_and_nan(tmp_path):
    """keras.ops.sum of values whose sum overflows is inf (a compensated sum must not turn it
    into inf - inf = NaN); max / min / mean of a NaN row are NaN."""
    i = keras.Input((4,))
    model = keras.Model(i, [keras.ops.sum(i, axis=-1), keras.ops.max(i, axis=-1),
                            keras.ops.mean(i, axis=-1), keras.ops.min(i, axis=-1)], name="reduce")
    x = np.array([[1, 3e38, 3e38, 1], [NAN, 1, 2, 3], [INF, -INF, 1, 1], [1, 2, 3, 4],
                  [-3e38, -3e38, 0, 0]], np.float32)
    assert_nonfinite_match(model, x, tmp_path)


def sequences_with_nan():
    x = np.random.default_rng(1).uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    x[0, 1, 2] = NAN
    return x


@pytest.mark.parametrize("layer", [lambda: L.LSTM(4), lambda: L.GRU(4, return_sequences=True),
                                   lambda: L.SimpleRNN(4, activation="relu",
                                                       return_sequences=True)],
                         ids=["lstm", "gru", "simple_rnn_relu"])
def test_recurrent_layers_with_nan_input(layer, tmp_path):
    model = keras.Sequential([keras.Input((3, 4)), layer()], name="rnn_nan")
    assert_nonfinite_match(model, sequences_with_nan(), tmp_path)


def test_multi_head_attention_with_nan_input(tmp_path):
    q = keras.Input((3, 4))
    model = keras.Model(q, L.MultiHeadAttention(2, 4)(q, q), name="mha_nan")
    assert_nonfinite_match(model, sequences_with_nan(), tmp_path)
