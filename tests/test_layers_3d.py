"""The 3D layer family against Keras 3 (.keras and .h5): Conv3D (strides, valid/same, dilation,
groups, activations), Conv3DTranspose (strides, output_padding, dilation), Max/AveragePooling3D,
GlobalMax/AveragePooling3D (keepdims), ZeroPadding3D, Cropping3D, UpSampling3D, each also
channels_first; load-time fusion of Conv3D -> BatchNormalization -> ReLU; the ops against numpy
(texture-stored inputs included); unsupported options and bad shapes."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras
from spatial_helpers import (F, assert_branches_match_keras, assert_layer_matches, layer_spec,
                             randomized)

import kerasgl as kg
from kerasgl.layers.convolutional.conv3d import Conv3D
from kerasgl.layers.pooling.pooling3d import MaxPooling3D
from kerasgl.layers.reshaping.spatial3d import Cropping3D, UpSampling3D
from kerasgl.ops import pool3d, spatial3d
from kerasgl.saving.spec import LayerSpec

L = keras.layers


# Channels 3 (scalar input path) and 8 (vec4 input path); odd, unequal spatial sizes.
@pytest.mark.parametrize("channels", [3, 8])
def test_conv3d_grid(channels, tmp_path):
    layers = [
        F.Conv3D(5, 3, name="k3_valid"),
        F.Conv3D(8, 3, padding="same", activation="relu", name="k3_same_relu"),
        F.Conv3D(7, (2, 3, 1), strides=(2, 1, 2), padding="same", name="k2x3x1_s2x1x2_same"),
        F.Conv3D(4, 3, strides=2, use_bias=False, name="k3_s2_nobias"),
        F.Conv3D(6, 3, dilation_rate=2, padding="same", activation="tanh", name="k3_d2_same"),
        F.Conv3D(3, (2, 2, 3), dilation_rate=(1, 2, 1), name="d1x2x1"),
        F.Conv3D(9, 1, activation="gelu", name="k1"),
        F.Conv3D(4, 2, padding="same", activation="softmax", name="softmax"),
        F.Conv3D(4, 4, strides=3, padding="same", activation="leaky_relu", name="k4_s3_same"),
    ]
    if channels == 8:
        layers += [F.Conv3D(6, 3, groups=2, padding="same", name="g2"),
                   F.Conv3D(16, 2, groups=8, strides=2, activation="sigmoid", name="g8")]
    assert_branches_match_keras(tmp_path, (5, 6, 7, channels), layers, f"conv3d_c{channels}")


def test_conv3d_large_tiles(tmp_path):
    """Enough voxels and channels for 16-voxel x 32-channel tiles, a padded channel block
    (40 = 32 + 8) and grouped blocks."""
    layers = [F.Conv3D(40, 3, padding="same", activation="relu6", name="c40"),
              F.Conv3D(32, 1, name="c32_1x1"),
              F.Conv3D(48, 3, strides=(1, 2, 2), groups=4, name="g4")]
    assert_branches_match_keras(tmp_path, (6, 9, 11, 16), layers, "conv3d_large")


def test_conv3d_transpose_grid(tmp_path):
    layers = [
        F.Conv3DTranspose(5, 3, name="k3_valid"),
        F.Conv3DTranspose(4, 3, strides=2, padding="same", activation="relu", name="k3_s2_same"),
        F.Conv3DTranspose(3, (2, 3, 4), strides=(2, 1, 3), name="s2x1x3_valid"),
        F.Conv3DTranspose(4, 3, strides=2, output_padding=1, name="outpad1_valid"),
        F.Conv3DTranspose(4, 3, strides=2, padding="same", output_padding=(0, 1, 1),
                          name="outpad_same"),
        F.Conv3DTranspose(5, 3, dilation_rate=2, padding="same", use_bias=False, name="d2"),
        F.Conv3DTranspose(4, 2, strides=2, padding="same", activation="softmax", name="softmax"),
    ]
    assert_branches_match_keras(tmp_path, (3, 4, 5, 8), layers, "conv3d_transpose")


def test_conv3d_channels_first(tmp_path):
    layers = [F.Conv3D(4, 3, data_format="channels_first", name="conv"),
              F.Conv3D(5, 3, padding="same", data_format="channels_first", activation="softmax",
                       name="conv_softmax"),
              F.Conv3DTranspose(3, 3, strides=2, data_format="channels_first", name="transpose")]
    assert_branches_match_keras(tmp_path, (3, 5, 4, 6), layers, "conv3d_channels_first")


@pytest.mark.parametrize("kind", ["Max", "Average"])
@pytest.mark.parametrize("channels", [3, 8])
def test_pooling3d_grid(kind, channels, tmp_path):
    cls = getattr(L, f"{kind}Pooling3D")
    layers = [cls(2, name="p2"),
              cls(3, strides=2, name="p3_s2_valid"),
              cls(3, strides=2, padding="same", name="p3_s2_same"),
              cls((2, 3, 1), strides=(1, 2, 1), padding="same", name="p2x3x1_s1x2x1_same"),
              cls(3, strides=1, padding="same", name="p3_s1_same"),
              cls((1, 3, 2), strides=(2, 3, 1), name="p1x3x2_s2x3x1")]
    assert_branches_match_keras(tmp_path, (7, 6, 5, channels), layers,
                                f"{kind.lower()}pool3d_c{channels}")


def test_pooling3d_channels_first_and_global(tmp_path):
    layers = [L.MaxPooling3D(2, data_format="channels_first", name="max_cf"),
              L.AveragePooling3D(3, strides=2, padding="same", data_format="channels_first",
                                 name="avg_cf"),
              L.GlobalMaxPooling3D(name="gmax"), L.GlobalAveragePooling3D(name="gavg"),
              L.GlobalMaxPooling3D(keepdims=True, name="gmax_keep"),
              L.GlobalAveragePooling3D(keepdims=True, name="gavg_keep"),
              L.GlobalAveragePooling3D(data_format="channels_first", name="gavg_cf"),
              L.GlobalMaxPooling3D(data_format="channels_first", keepdims=True,
                                   name="gmax_cf_keep")]
    assert_branches_match_keras(tmp_path, (4, 5, 6, 7), layers, "pool3d_cf_global")


def test_reshaping3d(tmp_path):
    layers = [L.ZeroPadding3D(name="pad_default"), L.ZeroPadding3D(2, name="pad2"),
              L.ZeroPadding3D((1, 0, 2), name="pad_1_0_2"),
              L.ZeroPadding3D(((1, 0), (0, 2), (2, 1)), name="pad_pairs"),
              L.ZeroPadding3D(((0, 1), (2, 0), (1, 1)), data_format="channels_first", name="pad_cf"),
              L.Cropping3D(name="crop_default"), L.Cropping3D((0, 2, 1), name="crop_0_2_1"),
              L.Cropping3D(((1, 0), (2, 1), (0, 3)), name="crop_pairs"),
              L.Cropping3D(((1, 1), (0, 2), (1, 0)), data_format="channels_first", name="crop_cf"),
              L.UpSampling3D(name="up_default"), L.UpSampling3D((1, 2, 3), name="up_1_2_3"),
              L.UpSampling3D((3, 1, 2), data_format="channels_first", name="up_cf")]
    assert_branches_match_keras(tmp_path, (4, 5, 6, 3), layers, "reshaping3d_c3")
    layers = [L.ZeroPadding3D((1, 2, 0), name="pad"), L.Cropping3D(((1, 0), (0, 1), (2, 0)),
                                                                   name="crop"),
              L.UpSampling3D((2, 1, 2), name="up")]
    assert_branches_match_keras(tmp_path, (3, 4, 5, 8), layers, "reshaping3d_c8")


def test_conv3d_model_with_fusions(tmp_path):
    """Conv3D -> BatchNormalization -> ReLU (fused at load), after a ZeroPadding3D, through
    pooling and upsampling: one small volumetric model."""
    model = keras.Sequential([
        keras.Input((6, 8, 8, 4)),
        L.ZeroPadding3D(1),
        F.Conv3D(8, 3, use_bias=False),
        L.BatchNormalization(),
        L.ReLU(),
        L.MaxPooling3D(2),
        F.Conv3DTranspose(4, 3, strides=2, padding="same"),
        L.BatchNormalization(),
        L.Activation("relu"),
        L.UpSampling3D((1, 2, 1)),
        L.Cropping3D(((1, 0), (1, 1), (0, 1))),
        L.GlobalAveragePooling3D(),
    ], name="conv3d_model")
    assert_matches_keras(model, tmp_path)


def test_ops_against_numpy_and_textures():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (2, 4, 6, 5, 4)).astype("float32")
    x[0, 0, 0, 0, 0] = -np.inf
    with kg.tidy():
        t = kg.tensor(x)
        windows = x.reshape(2, 2, 2, 3, 2, 5, 4).max(axis=(2, 4))   # 2x2x1 windows, stride 2x2x1
        np.testing.assert_array_equal(pool3d.pool3d(t, "max", (2, 2, 1), (2, 2, 1)).numpy(), windows)
        mean = x[..., 1:].reshape(2, 2, 2, 3, 2, 5, 3).mean(axis=(2, 4))
        np.testing.assert_allclose(pool3d.pool3d(t, "avg", (2, 2, 1), (2, 2, 1)).numpy()[..., 1:],
                                   mean, rtol=1e-5, atol=1e-6)
        padded = np.pad(x, [(0, 0), (1, 2), (0, 1), (3, 0), (0, 0)])
        np.testing.assert_array_equal(spatial3d.pad_crop3d(t, (1, 2), (0, 1), (3, 0)).numpy(), padded)
        np.testing.assert_array_equal(spatial3d.pad_crop3d(t, (-1, -2), (0, -1), (-3, 0)).numpy(),
                                      x[:, 1:2, :5, 3:])
        repeated = x.repeat(2, axis=1).repeat(1, axis=2).repeat(3, axis=3)
        np.testing.assert_array_equal(spatial3d.upsample3d(t, (2, 1, 3)).numpy(), repeated)
        # Texture-stored inputs give texture-stored results with the same numbers.
        odd = x[..., :3].copy()
        y = spatial3d.upsample3d(kg.tensor(odd, storage="texture"), (1, 2, 2))
        assert y.storage == "texture"
        np.testing.assert_array_equal(y.numpy(), odd.repeat(2, axis=2).repeat(2, axis=3))


def test_conv3d_from_spec_on_texture_input():
    x = np.random.default_rng(5).uniform(-1, 1, (2, 4, 6, 5, 4)).astype("float32")
    layer = randomized(F.Conv3D(8, 3, padding="same", activation="relu"), x.shape, seed=6)
    expected = np.asarray(layer(x))
    assert_layer_matches(Conv3D(layer_spec(layer), 3), x, expected, storage="texture")


def test_conv3d_absorbs_zero_padding():
    """The graph-fusion hook a ZeroPadding3D -> Conv3D("valid") fusion would use: the convolution
    reads the padding as its own, with Keras's numbers for the padded pair."""
    pad = L.ZeroPadding3D(((1, 0), (2, 1), (0, 2)))
    x = np.random.default_rng(7).uniform(-1, 1, (2, 4, 5, 3, 4)).astype("float32")
    layer = randomized(F.Conv3D(6, 3, strides=(1, 2, 1)), pad.compute_output_shape(x.shape), seed=8)
    expected = np.asarray(layer(pad(x)))
    ours = Conv3D(layer_spec(layer), 3)
    assert ours.absorb_zero_padding(((1, 0), (2, 1), (0, 2)))
    assert ours.compute_output_shape((None, 4, 5, 3, 4)) == (None,) + expected.shape[1:]
    assert_layer_matches(ours, x, expected)


def test_unsupported_and_bad_shapes():
    spec = layer_spec(F.Conv3D(4, 3), (None, 5, 5, 5, 3))
    spec.config["padding"] = "causal"
    with pytest.raises(kg.UnsupportedLayerError, match="padding='causal'"):
        Conv3D(spec, 3)
    conv = Conv3D(layer_spec(F.Conv3D(4, 3), (None, 5, 5, 5, 3)), 3)
    with pytest.raises(kg.ShapeError, match="expects 3 input channels. Received 5"):
        conv.compute_output_shape((None, 5, 5, 5, 5))
    with pytest.raises(kg.ShapeError, match="rank 5"):
        conv.compute_output_shape((None, 8, 8, 3))
    conv.build((None, 5, 5, 5, 3))
    try:
        with kg.tidy():
            with pytest.raises(kg.ShapeError, match="does not fit"):
                conv.call(kg.zeros((1, 2, 5, 5, 3)))
    finally:
        conv.dispose()
    pool = MaxPooling3D(LayerSpec("MaxPooling3D", "pool", L.MaxPooling3D(4).get_config()), 3)
    with pytest.raises(kg.ShapeError, match="does not fit"):
        pool.compute_output_shape((None, 8, 3, 8, 2))
    crop = Cropping3D(LayerSpec("Cropping3D", "crop", L.Cropping3D(2).get_config()), 3)
    with pytest.raises(kg.ShapeError, match="leaves nothing"):
        crop.compute_output_shape((None, 8, 4, 8, 2))
    config = L.UpSampling3D().get_config()
    config["interpolation"] = "bilinear"
    with pytest.raises(kg.UnsupportedLayerError, match="interpolation='bilinear'"):
        UpSampling3D(LayerSpec("UpSampling3D", "up", config), 3)
