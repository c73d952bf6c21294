"""Convolution layers against Keras 3 (.keras and .h5): Conv1D/2D, DepthwiseConv1D/2D,
SeparableConv1D/2D, Conv1D/2DTranspose over grids of kernel sizes, strides, paddings, dilations,
groups, depth multipliers, activations and odd input sizes; direct construction from a LayerSpec;
unsupported options and bad shapes."""
import numpy as np
import pytest
from keras_ref import assert_close, assert_matches_keras, keras
from spatial_helpers import (F, assert_branches_match_keras, assert_layer_matches, layer_spec,
                             randomized)

import kerasgl as kg
from kerasgl.layers.convolutional.conv import Conv2D, DepthwiseConv2D, SeparableConv1D

L = keras.layers


# Channels 6 (scalar input path) and 8 (vec4 input path); odd spatial sizes.
@pytest.mark.parametrize("channels", [6, 8])
def test_conv2d_grid(channels, tmp_path):
    layers = [
        F.Conv2D(5, 3, name="k3_valid"),
        F.Conv2D(8, 3, padding="same", activation="relu", name="k3_same_relu"),
        F.Conv2D(7, (2, 5), strides=(2, 1), padding="same", name="k2x5_s2x1_same"),
        F.Conv2D(4, 3, strides=2, padding="valid", use_bias=False, name="k3_s2_nobias"),
        F.Conv2D(6, 3, dilation_rate=2, padding="same", activation="tanh", name="k3_d2_same"),
        F.Conv2D(3, (3, 2), dilation_rate=(1, 3), name="k3x2_d1x3"),
        F.Conv2D(9, 1, activation="gelu", name="k1"),
        F.Conv2D(6, 3, groups=2, padding="same", name="g2"),
        F.Conv2D(12, 3, groups=channels // 2, strides=2, activation="sigmoid", name="g_half"),
        F.Conv2D(5, 3, padding="same", activation="softmax", name="softmax"),
        F.Conv2D(4, 4, strides=3, padding="same", activation="leaky_relu", name="k4_s3_same"),
    ]
    assert_branches_match_keras(tmp_path, (9, 7, channels), layers, f"conv2d_c{channels}")


def test_conv2d_large_tiles(tmp_path):
    """Enough pixels and channels for 16-pixel x 32-channel tiles, padded channel blocks (40 = 32 + 8)
    and grouped blocks."""
    layers = [F.Conv2D(40, 3, padding="same", activation="relu6", name="c40"),
              F.Conv2D(64, 1, name="c64_1x1"),
              F.Conv2D(48, 3, strides=2, groups=4, name="g4"),
              F.Conv2D(33, 3, dilation_rate=2, name="c33_d2")]
    assert_branches_match_keras(tmp_path, (21, 19, 32), layers, "conv2d_large")


def test_wide_tiles_on_larger_images(tmp_path):
    """Images large enough for the widest tiles: 16-pixel conv tiles and 16/8/4-pixel depthwise row
    tiles, with partial last tiles (37 columns, 2220 pixels)."""
    layers = [F.Conv2D(32, 3, padding="same", activation="relu", name="conv_pix16"),
              F.Conv2D(20, 1, name="conv1x1"),
              F.DepthwiseConv2D(3, padding="same", name="dw_row8"),
              F.DepthwiseConv2D(3, strides=2, padding="same", activation="relu6", name="dw_s2"),
              F.DepthwiseConv2D(5, padding="same", depth_multiplier=2, name="dw_k5_m2"),
              F.SeparableConv2D(24, 3, padding="same", name="separable")]
    assert_branches_match_keras(tmp_path, (30, 37, 16), layers, "wide_tiles")
    layers = [F.DepthwiseConv2D(3, padding="same", name="dw_row16"),
              F.DepthwiseConv2D(3, dilation_rate=2, padding="same", name="dw_d2")]
    assert_branches_match_keras(tmp_path, (9, 32, 8), layers, "wide_rows")


def test_conv2d_first_layer_rgb(tmp_path):
    model = keras.Sequential([keras.Input((33, 31, 3)),
                              F.Conv2D(16, 3, strides=2, padding="same", activation="swish")],
                             name="conv_rgb")
    assert_matches_keras(model, tmp_path, inputs=[np.random.default_rng(2).uniform(
        -1, 1, (3, 33, 31, 3)).astype("float32")])


@pytest.mark.parametrize("channels", [5, 8])
def test_conv1d_grid(channels, tmp_path):
    layers = [
        F.Conv1D(4, 3, name="k3_valid"),
        F.Conv1D(6, 3, padding="causal", name="causal"),
        F.Conv1D(5, 2, padding="causal", dilation_rate=3, activation="relu", name="causal_d3"),
        F.Conv1D(7, 4, strides=2, padding="same", name="k4_s2_same"),
        F.Conv1D(3, 5, strides=3, use_bias=False, name="k5_s3"),
        F.Conv1D(6, 3, dilation_rate=2, padding="same", activation="elu", name="d2_same"),
        F.Conv1D(channels * 2, 3, groups=channels, name="depthwise_groups"),
        F.Conv1D(4, 3, padding="same", activation="softmax", name="softmax"),
    ]
    assert_branches_match_keras(tmp_path, (13, channels), layers, f"conv1d_c{channels}")


@pytest.mark.parametrize("channels", [5, 8])
def test_depthwise_conv2d_grid(channels, tmp_path):
    layers = [
        F.DepthwiseConv2D(3, name="k3"),
        F.DepthwiseConv2D(3, padding="same", activation="relu6", name="same_relu6"),
        F.DepthwiseConv2D(3, strides=2, padding="same", name="s2_same"),
        F.DepthwiseConv2D((2, 4), strides=(1, 2), depth_multiplier=2, name="k2x4_m2"),
        F.DepthwiseConv2D(3, dilation_rate=2, padding="same", depth_multiplier=3, name="d2_m3"),
        F.DepthwiseConv2D(5, padding="same", use_bias=False, name="k5_nobias"),
        F.DepthwiseConv2D(3, padding="same", activation="softmax", name="softmax"),
    ]
    assert_branches_match_keras(tmp_path, (11, 9, channels), layers, f"depthwise_c{channels}")


def test_depthwise_conv1d_grid(tmp_path):
    layers = [F.DepthwiseConv1D(3, name="k3"),
              F.DepthwiseConv1D(3, strides=2, padding="same", depth_multiplier=2, name="s2_m2"),
              F.DepthwiseConv1D(2, dilation_rate=2, name="d2")]
    assert_branches_match_keras(tmp_path, (12, 6), layers, "depthwise1d")


def test_separable_conv_grid(tmp_path):
    layers = [F.SeparableConv2D(6, 3, name="k3"),
              F.SeparableConv2D(9, 3, strides=2, padding="same", depth_multiplier=2,
                                activation="relu", name="s2_m2"),
              F.SeparableConv2D(4, (3, 2), dilation_rate=2, use_bias=False, name="d2_nobias"),
              F.SeparableConv2D(5, 3, padding="same", activation="softmax", name="softmax")]
    assert_branches_match_keras(tmp_path, (10, 9, 7), layers, "separable2d")
    layers = [F.SeparableConv1D(6, 3, name="k3"),
              F.SeparableConv1D(5, 3, strides=2, padding="same", depth_multiplier=3, name="s2_m3"),
              F.SeparableConv1D(4, 2, padding="same", dilation_rate=2, activation="tanh",
                                name="d2_same")]
    assert_branches_match_keras(tmp_path, (11, 4), layers, "separable1d")


def test_conv_transpose_grid(tmp_path):
    layers = [
        F.Conv2DTranspose(5, 3, name="k3_valid"),
        F.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu", name="k3_s2_same"),
        F.Conv2DTranspose(3, 4, strides=2, padding="same", name="k4_s2_same"),
        F.Conv2DTranspose(6, 3, strides=(2, 3), padding="valid", name="s2x3_valid"),
        F.Conv2DTranspose(3, 2, strides=3, name="k2_s3_valid"),
        F.Conv2DTranspose(4, 3, strides=2, padding="valid", output_padding=1, name="outpad1_valid"),
        F.Conv2DTranspose(4, 3, strides=2, padding="same", output_padding=(0, 1), name="outpad_same"),
        F.Conv2DTranspose(5, 3, dilation_rate=2, padding="same", use_bias=False, name="d2"),
        F.Conv2DTranspose(4, 3, strides=2, padding="same", activation="softmax", name="softmax"),
    ]
    assert_branches_match_keras(tmp_path, (5, 6, 8), layers, "conv2d_transpose")
    layers = [F.Conv1DTranspose(4, 3, strides=2, padding="same", name="s2_same"),
              F.Conv1DTranspose(3, 5, strides=3, name="k5_s3_valid"),
              F.Conv1DTranspose(5, 3, strides=2, output_padding=1, name="outpad")]
    assert_branches_match_keras(tmp_path, (7, 3), layers, "conv1d_transpose")


def test_conv_channels_first(tmp_path):
    layers = [F.Conv2D(4, 3, data_format="channels_first", name="conv"),
              F.Conv2D(5, 3, padding="same", data_format="channels_first", activation="softmax",
                       name="conv_softmax"),
              F.DepthwiseConv2D(3, depth_multiplier=2, data_format="channels_first", name="dw"),
              F.Conv2DTranspose(3, 3, strides=2, data_format="channels_first", name="transpose")]
    assert_branches_match_keras(tmp_path, (3, 7, 6), layers, "conv_channels_first")


def test_conv_stack_with_texture_input():
    """A conv from a spec on a texture-stored input returns a texture, with Keras's numbers."""
    x = np.random.default_rng(5).uniform(-1, 1, (2, 6, 5, 4)).astype("float32")
    layer = randomized(F.Conv2D(8, 3, padding="same", activation="relu"), x.shape, seed=6)
    expected = np.asarray(layer(x))
    assert_layer_matches(Conv2D(layer_spec(layer), 3), x, expected, storage="texture")


def test_unsupported_and_bad_shapes():
    spec = layer_spec(F.Conv2D(4, 3), (None, 8, 8, 3))
    spec.config["padding"] = "causal"
    with pytest.raises(kg.UnsupportedLayerError, match="padding='causal'"):
        Conv2D(spec, 3)
    spec = layer_spec(F.Conv2D(4, 3), (None, 8, 8, 3))
    spec.config["activation"] = "no_such_activation"
    with pytest.raises(kg.UnsupportedLayerError, match="no_such_activation"):
        Conv2D(spec, 3)
    layer = Conv2D(layer_spec(F.Conv2D(4, 3), (None, 8, 8, 3)), 3)
    with pytest.raises(kg.ShapeError, match="expects 3 input channels. Received 5"):
        layer.compute_output_shape((None, 8, 8, 5))
    with pytest.raises(kg.ShapeError, match="rank 4"):
        layer.compute_output_shape((None, 8, 3))
    dw = DepthwiseConv2D(layer_spec(F.DepthwiseConv2D(3), (None, 8, 8, 3)), 3)
    dw.build((None, 8, 8, 3))
    try:
        with kg.tidy():
            with pytest.raises(kg.ShapeError, match="does not fit"):
                dw.call(kg.zeros((1, 2, 2, 3)))
    finally:
        dw.dispose()


def test_weights_packed_once_and_no_leaks_across_calls():
    """Calls allocate only their output: the weights are uploaded at build, not per call."""
    layer = Conv2D(layer_spec(F.Conv2D(8, 3, padding="same"), (None, 6, 6, 4)), 3)
    layer.build((None, 6, 6, 4))
    try:
        x = kg.ones((1, 6, 6, 4))
        before = kg.memory().num_tensors
        for _ in range(3):
            layer.call(x).dispose()
        assert kg.memory().num_tensors == before
        x.dispose()
    finally:
        layer.dispose()


def test_separable_conv1d_causal_from_keras2_config():
    """Keras 2 allowed padding="causal" in SeparableConv1D (Keras 3 refuses it): it must equal
    left zero padding of (kernel - 1) * dilation followed by a "valid" convolution."""
    layer = randomized(F.SeparableConv1D(5, 3, dilation_rate=2, depth_multiplier=2,
                                         activation="relu"), (None, 13, 4), seed=8)
    x = np.random.default_rng(7).uniform(-1, 1, (2, 9, 4)).astype("float32")
    expected = np.asarray(layer(np.pad(x, ((0, 0), (4, 0), (0, 0)))))
    ours = SeparableConv1D(layer_spec(layer, config=dict(layer.get_config(), padding="causal")), 2)
    assert ours.compute_output_shape((None, 9, 4)) == (None, 9, 5)
    assert_layer_matches(ours, x, expected)


def _bn_affine(bn):
    gamma, beta, mean, var = bn.get_weights()
    inv = gamma / np.sqrt(var + bn.epsilon)
    return inv, beta - mean * inv


@pytest.mark.parametrize("make", [
    lambda: F.Conv2D(12, 3, name="conv"),
    lambda: F.Conv2D(8, 3, groups=2, use_bias=False, name="grouped"),
    lambda: F.DepthwiseConv2D(3, strides=2, depth_multiplier=2, name="depthwise"),
    lambda: F.SeparableConv2D(6, 3, name="separable"),
    lambda: F.Conv2DTranspose(5, 3, strides=2, name="transpose"),
], ids=["conv", "grouped", "depthwise", "separable", "transpose"])
def test_fusions_match_keras_sequence(make):
    """ZeroPadding -> conv -> BatchNormalization -> ReLU6 from Keras equals one fused kerasgl conv
    (padding absorbed where the layer allows it, BN folded, ReLU6 adopted)."""
    rng = np.random.default_rng(11)
    conv_layer = make()
    pad, bn = L.ZeroPadding2D(((0, 1), (1, 1))), L.BatchNormalization()
    model = keras.Sequential([keras.Input((9, 8, 4)), pad, conv_layer, bn, L.ReLU(6.0)])
    for var in model.weights:
        low = 0.5 if "variance" in var.path else -1.0
        var.assign(rng.uniform(low, 1.0, var.shape).astype("float32"))
    x = rng.uniform(-1, 1, (2, 9, 8, 4)).astype("float32")
    expected = np.asarray(model(x))
    spec = layer_spec(conv_layer)
    from kerasgl.layers import LAYER_CLASSES
    from kerasgl.layers.activation_functions import Pointwise
    ours = LAYER_CLASSES[spec.class_name](spec, 3)
    absorbed = ours.absorb_zero_padding(((0, 1), (1, 1)))
    assert absorbed == (spec.class_name != "Conv2DTranspose")
    assert ours.fold_channel_affine(*_bn_affine(bn))
    assert ours.fuse_activation(Pointwise("act_relu6"))
    assert not ours.fuse_activation(Pointwise("act_relu"))     # already has an activation
    assert not ours.fold_channel_affine(*_bn_affine(bn))       # not exact after an activation
    with kg.tidy():
        feed = kg.tensor(x if absorbed else np.pad(x, ((0, 0), (0, 1), (1, 1), (0, 0))))
        shape = (None,) + feed.shape[1:]
        assert ours.compute_output_shape(shape) == (None,) + expected.shape[1:]
        ours.build(shape)
        try:
            assert not ours.fold_channel_affine(*_bn_affine(bn))   # weights already packed
            assert_close(ours.call(feed).numpy(), expected)
        finally:
            ours.dispose()


def test_fusions_refused_where_not_exact():
    relu = Conv2D(layer_spec(F.Conv2D(4, 3, activation="relu"), (None, 8, 8, 3)), 3)
    assert not relu.fold_channel_affine(np.ones(4), np.zeros(4))
    same = Conv2D(layer_spec(F.Conv2D(4, 3, padding="same"), (None, 8, 8, 3)), 3)
    assert not same.absorb_zero_padding(((1, 1), (1, 1)))
    assert not same.fold_channel_affine(np.ones(5), np.zeros(5))     # wrong channel count
    first = Conv2D(layer_spec(F.Conv2D(4, 3, data_format="channels_first"), (None, 3, 8, 8)), 3)
    assert not first.fold_channel_affine(np.ones(4), np.zeros(4))


def test_lora_conv(tmp_path):
    """.keras stores a LoRA conv's merged kernel (it must match); legacy .h5 keeps the factors
    apart, which kerasgl refuses by name."""
    model = keras.Sequential([keras.Input((6, 6, 3)), F.Conv2D(4, 3, name="lora_conv")])
    rng = np.random.default_rng(0)
    model.layers[0].kernel.assign(rng.uniform(-1, 1, (3, 3, 3, 4)))
    model.layers[0].enable_lora(2)
    model.layers[0].lora_kernel_a.assign(rng.uniform(-1, 1, model.layers[0].lora_kernel_a.shape))
    model.layers[0].lora_kernel_b.assign(rng.uniform(-1, 1, model.layers[0].lora_kernel_b.shape))
    x = rng.uniform(-1, 1, (2, 6, 6, 3)).astype("float32")
    expected = model.predict(x, verbose=0)
    model.save(str(tmp_path / "lora.keras"))
    with kg.load_model(str(tmp_path / "lora.keras")) as loaded:
        assert_close(loaded.predict(x, verbose=0), expected)
    model.save(str(tmp_path / "lora.h5"))
    with pytest.raises(kg.UnsupportedLayerError, match="lora_conv.*lora_rank"):
        kg.load_model(str(tmp_path / "lora.h5"))


def test_packed_weights_never_have_a_power_of_two_texel_count():
    """ops.conv.not_power_of_two_texels (llvmpipe compiles a second variant of a program for
    images whose width is a power of two): the result keeps every value, in place, and its vec4
    count is never a power of two."""
    from kerasgl.ops.conv import not_power_of_two_texels
    for texels in list(range(1, 70)) + [1024, 4096, 4097]:
        flat = np.arange(4 * texels, dtype=np.float32)
        out = not_power_of_two_texels(flat)
        n = out.size // 4
        assert out.size % 4 == 0 and n & (n - 1) != 0, texels
        assert np.array_equal(out[:flat.size], flat) and not out[flat.size:].any()


# -- convolutions as implicit GEMMs (shaders/conv_gemm.comp: what GPUs run) -----------------------
IMPLICIT_GEMM = ("matmul_tiled=1,matmul_as_conv=0,conv_gemm=1",
                 "matmul_tiled=1,matmul_as_conv=0,conv_gemm=1,conv_weights_image=1,"
                 "conv_input_image=1,gemm_tile_m=32,gemm_tile_n=128,gemm_block_n=8,gemm_tile_k=32")


@pytest.mark.parametrize("setting", IMPLICIT_GEMM)
def test_convolutions_as_implicit_gemm(setting, tmp_path, monkeypatch):
    """1x1 (a plain GEMM), KxK with padding, strides and dilation, partial tiles of pixels and
    channels, a Conv1D; a residual Add and a ReLU fused into the convolution; what the GEMM kernel
    leaves to conv2d.comp on the same matrix-layout weights (fused max pooling, groups,
    a transposed convolution, 6 input channels)."""
    from kerasgl.runtime import tuning
    monkeypatch.setenv(tuning.ENV, setting)
    layers = [F.Conv2D(40, 3, padding="same", activation="relu6", name="k3"),
              F.Conv2D(64, 1, name="k1"),
              F.Conv2D(20, 1, strides=2, name="k1_s2"),
              F.Conv2D(36, 3, dilation_rate=2, activation="gelu", name="k3_d2"),
              F.Conv2D(68, (5, 3), strides=(2, 1), padding="same", name="k5x3_s2x1"),
              F.Conv2D(12, 3, groups=4, name="g4"),
              F.Conv2DTranspose(8, 3, strides=2, name="transposed")]
    assert_branches_match_keras(tmp_path, (21, 19, 16), layers, "implicit_gemm")
    x = keras.Input((12, 10, 8))
    a = L.Conv2D(16, 3, padding="same", activation="relu", name="a")(x)
    b = L.Conv2D(16, 1, name="b")(a)
    y = L.ReLU()(L.Add()([b, a]))
    y = L.MaxPooling2D(2)(L.Conv2D(24, 3, padding="same", activation="relu", name="pooled")(y))
    c = L.Conv1D(12, 3, padding="causal", name="c1d")(L.Reshape((80, 24))(
        L.Conv2D(24, 3, name="rgb")(L.Conv2D(6, 1)(x))))
    model = keras.Model(x, [y, c], name="gemm_residual")
    assert_matches_keras(model, tmp_path, inputs=[np.random.default_rng(3).uniform(
        -1, 1, (2, 12, 10, 8)).astype("float32")])
    path = str(tmp_path / "gemm_residual.keras")
    with kg.load_model(path) as loaded:
        with kg.profile(gpu_timing=False) as p:
            loaded.predict(np.zeros((1, 12, 10, 8), np.float32), verbose=0)
    by_layer = {e.layer: e.kernel.split()[0] for e in p.events}
    assert by_layer["a"] == by_layer["b"] == by_layer["c1d"] == "conv_gemm.comp"
    assert by_layer["pooled"] == "conv2d.comp"          # pooling fused: conv2d.comp's


def test_weights_split_over_storage_blocks_as_implicit_gemm(tmp_path, monkeypatch):
    """Weights over KERASGL_MAX_STORAGE_BLOCK in several matrix-layout pieces, one dispatch each
    writing its channels: on the GEMM kernel, and on conv2d.comp (pooling fused)."""
    from kerasgl import settings
    from kerasgl.runtime import tuning
    monkeypatch.setenv(tuning.ENV, IMPLICIT_GEMM[0])
    x = keras.Input((5, 6, 16))
    a = L.Conv2D(40, 3, padding="same", activation="relu", name="split")(x)
    b = L.MaxPooling2D(2)(L.Conv2D(20, 3, padding="same", name="split_pooled")(a))
    model = keras.Model(x, [a, b], name="split_gemm")
    with settings.override(max_storage_block=8192):
        assert_matches_keras(model, tmp_path, formats=(".keras",))
        with kg.load_model(str(tmp_path / "split_gemm.keras")) as loaded:
            assert len(loaded.get_layer("split").kernel.pieces) > 1
            assert loaded.get_layer("split").kernel.matrix
