"""Spatial reshaping layers against Keras 3 (.keras and .h5): ZeroPadding1D/2D, Cropping1D/2D,
UpSampling1D/2D (nearest, bilinear with Keras 3's half-pixel resize, and bicubic / lanczos3 /
lanczos5 as ops.image.resize computes them), channels_first; unsupported interpolations (and
sizes) and crops that leave nothing. Keras 2's other interpolations (tf.image.resize's) are
checked against tf-keras in tests/test_keras2_files.py."""
import numpy as np
import pytest
from keras_ref import assert_close, keras
from spatial_helpers import assert_branches_match_keras

import kerasgl as kg
from kerasgl.layers.reshaping.spatial import Cropping2D, UpSampling2D
from kerasgl.saving.spec import LayerSpec

L = keras.layers


@pytest.mark.parametrize("channels", [3, 8])
def test_padding_cropping_2d(channels, tmp_path):
    layers = [L.ZeroPadding2D(name="pad1"), L.ZeroPadding2D((2, 0), name="pad2x0"),
              L.ZeroPadding2D(((1, 2), (3, 0)), name="pad_asym"),
              L.Cropping2D(1, name="crop1"), L.Cropping2D(((0, 2), (3, 1)), name="crop_asym"),
              L.Cropping2D((2, 0), name="crop2x0"),
              L.ZeroPadding2D(((1, 0), (0, 2)), data_format="channels_first", name="pad_cf"),
              L.Cropping2D(((1, 1), (0, 2)), data_format="channels_first", name="crop_cf")]
    assert_branches_match_keras(tmp_path, (7, 6, channels), layers, f"padcrop2d_c{channels}")


def test_padding_cropping_1d(tmp_path):
    layers = [L.ZeroPadding1D(name="pad1"), L.ZeroPadding1D((3, 1), name="pad_asym"),
              L.Cropping1D(name="crop1"), L.Cropping1D((0, 4), name="crop_asym")]
    assert_branches_match_keras(tmp_path, (9, 5), layers, "padcrop1d")


@pytest.mark.parametrize("channels", [3, 8])
def test_upsampling_2d(channels, tmp_path):
    layers = [L.UpSampling2D(name="nearest2"), L.UpSampling2D((3, 1), name="nearest3x1"),
              L.UpSampling2D((1, 4), name="nearest1x4"),
              L.UpSampling2D(interpolation="bilinear", name="bilinear2"),
              L.UpSampling2D((3, 2), interpolation="bilinear", name="bilinear3x2"),
              L.UpSampling2D((4, 4), interpolation="bilinear", name="bilinear4"),
              L.UpSampling2D(2, data_format="channels_first", name="nearest_cf"),
              L.UpSampling2D(3, interpolation="bilinear", data_format="channels_first",
                             name="bilinear_cf")]
    assert_branches_match_keras(tmp_path, (5, 4, channels), layers, f"upsampling2d_c{channels}")


def test_upsampling_bilinear_one_pixel_and_1d(tmp_path):
    assert_branches_match_keras(tmp_path, (1, 1, 2), [
        L.UpSampling2D(3, interpolation="bilinear", name="single_pixel")], "upsampling_single")
    assert_branches_match_keras(tmp_path, (6, 5), [L.UpSampling1D(name="up2"),
                                                   L.UpSampling1D(3, name="up3")], "upsampling1d")


def test_upsampling_2d_resize_kernels(tmp_path):
    layers = [L.UpSampling2D(2, interpolation="bicubic", name="bicubic2"),
              L.UpSampling2D((3, 2), interpolation="lanczos3", name="lanczos3_3x2"),
              L.UpSampling2D(2, interpolation="lanczos5", name="lanczos5"),
              L.UpSampling2D(2, interpolation="bicubic", data_format="channels_first",
                             name="bicubic_cf")]
    assert_branches_match_keras(tmp_path, (5, 4, 3), layers, "upsampling2d_kernels")


def test_unsupported_and_bad_shapes():
    config = L.UpSampling2D(2, interpolation="bicubic").get_config()
    with pytest.raises(kg.UnsupportedLayerError, match="interpolation='area'"):
        UpSampling2D(LayerSpec("UpSampling2D", "up", {**config, "interpolation": "area"}), 3)
    with pytest.raises(kg.UnsupportedLayerError, match="unknown height or width"):
        UpSampling2D(LayerSpec("UpSampling2D", "up", config), 3).compute_output_shape(
            (None, None, 4, 3))
    crop = Cropping2D(LayerSpec("Cropping2D", "crop", L.Cropping2D(((2, 2), (0, 0))).get_config()), 3)
    with pytest.raises(kg.ShapeError, match="leaves nothing"):
        crop.compute_output_shape((None, 4, 5, 3))
    with kg.tidy():
        with pytest.raises(kg.ShapeError, match="leaves nothing"):
            crop.call(kg.zeros((1, 3, 5, 3)))


def test_pad_from_spec_on_texture():
    layer = L.ZeroPadding2D(((1, 0), (2, 1)))
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4, 5)).astype("float32")
    from kerasgl.layers.reshaping.spatial import ZeroPadding2D
    ours = ZeroPadding2D(LayerSpec("ZeroPadding2D", "pad", layer.get_config()), 3)
    with kg.tidy():
        y = ours.call(kg.tensor(x, storage="texture"))
        assert y.storage == "texture"
        assert_close(y.numpy(), np.asarray(layer(x)))
