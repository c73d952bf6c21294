"""Pooling layers against Keras 3 (.keras and .h5): Max/AveragePooling1D/2D over pool sizes,
strides and paddings (average with padding="same" excludes padded cells), GlobalMax/Average
pooling 1D/2D with keepdims, channels_first; the ops against numpy; bad shapes."""
import numpy as np
import pytest
from keras_ref import keras
from spatial_helpers import assert_branches_match_keras

import kerasgl as kg
from kerasgl.layers.pooling.pooling import MaxPooling2D
from kerasgl.ops import pool
from kerasgl.saving.spec import LayerSpec

L = keras.layers


@pytest.mark.parametrize("kind", ["Max", "Average"])
@pytest.mark.parametrize("channels", [3, 8])
def test_pooling2d_grid(kind, channels, tmp_path):
    cls = getattr(L, f"{kind}Pooling2D")
    layers = [cls(2, name="p2"),
              cls(3, strides=2, name="p3_s2_valid"),
              cls(3, strides=2, padding="same", name="p3_s2_same"),
              cls((2, 3), strides=(1, 2), padding="same", name="p2x3_s1x2_same"),
              cls(3, strides=1, padding="same", name="p3_s1_same"),
              cls((3, 1), strides=(3, 1), name="p3x1"),
              cls(4, strides=3, padding="same", name="p4_s3_same")]
    assert_branches_match_keras(tmp_path, (9, 7, channels), layers, f"{kind.lower()}pool2d_c{channels}")


@pytest.mark.parametrize("kind", ["Max", "Average"])
def test_pooling1d_grid(kind, tmp_path):
    cls = getattr(L, f"{kind}Pooling1D")
    layers = [cls(2, name="p2"), cls(3, strides=2, name="p3_s2"),
              cls(3, strides=2, padding="same", name="p3_s2_same"),
              cls(4, strides=1, padding="same", name="p4_s1_same")]
    assert_branches_match_keras(tmp_path, (11, 5), layers, f"{kind.lower()}pool1d")


def test_global_pooling(tmp_path):
    layers = [L.GlobalMaxPooling2D(name="gmax"), L.GlobalAveragePooling2D(name="gavg"),
              L.GlobalMaxPooling2D(keepdims=True, name="gmax_keep"),
              L.GlobalAveragePooling2D(keepdims=True, name="gavg_keep"),
              L.GlobalAveragePooling2D(data_format="channels_first", name="gavg_cf"),
              L.GlobalMaxPooling2D(data_format="channels_first", keepdims=True, name="gmax_cf_keep")]
    assert_branches_match_keras(tmp_path, (7, 5, 6), layers, "global2d")
    layers = [L.GlobalMaxPooling1D(name="gmax"), L.GlobalAveragePooling1D(name="gavg"),
              L.GlobalAveragePooling1D(keepdims=True, name="gavg_keep"),
              L.GlobalMaxPooling1D(data_format="channels_first", name="gmax_cf")]
    assert_branches_match_keras(tmp_path, (9, 8), layers, "global1d")


def test_pooling_channels_first(tmp_path):
    layers = [L.MaxPooling2D(2, data_format="channels_first", name="max"),
              L.AveragePooling2D(3, strides=2, padding="same", data_format="channels_first", name="avg")]
    assert_branches_match_keras(tmp_path, (3, 7, 6), layers, "pool_channels_first")
    layers = [L.MaxPooling1D(2, data_format="channels_first", name="max1d"),
              L.AveragePooling1D(3, padding="same", data_format="channels_first", name="avg1d")]
    assert_branches_match_keras(tmp_path, (4, 9), layers, "pool1d_channels_first")


def test_ops_against_numpy():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (2, 5, 6, 4)).astype("float32")
    x[0, 0, 0, 0] = -np.inf
    with kg.tidy():
        t = kg.tensor(x)
        np.testing.assert_array_equal(pool.global_pool(t, "max").numpy(), x.max(axis=(1, 2)))
        np.testing.assert_allclose(pool.global_pool(t, "avg", keepdims=True).numpy()[:, :, :, 1:],
                                   x.mean(axis=(1, 2), keepdims=True)[:, :, :, 1:], rtol=1e-5, atol=1e-6)
        only_inf = np.full((1, 2, 2, 1), -np.inf, "float32")
        assert pool.pool2d(kg.tensor(only_inf), "max", (2, 2), (2, 2)).numpy()[0, 0, 0, 0] == -np.inf
        windows = x.reshape(2, 5, 3, 2, 4).max(axis=3)   # 1x2 windows, stride 2
        np.testing.assert_array_equal(pool.pool2d(t, "max", (1, 2), (1, 2)).numpy(), windows)


def test_bad_shapes():
    layer = L.MaxPooling2D(4)
    spec = LayerSpec("MaxPooling2D", "pool", layer.get_config())
    ours = MaxPooling2D(spec, 3)
    with pytest.raises(kg.ShapeError, match="does not fit"):
        ours.compute_output_shape((None, 3, 8, 2))
    with pytest.raises(kg.ShapeError, match="rank 4"):
        ours.compute_output_shape((None, 8, 2))
    spec.config["padding"] = "full"          # not a Keras padding: a damaged file
    with pytest.raises(kg.ModelFileError, match="'padding' is 'full'"):
        MaxPooling2D(spec, 3)
