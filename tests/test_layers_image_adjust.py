"""Image adjustment layers against Keras 3 (.keras and .h5), as predict runs them: AutoContrast
(value ranges, constant and non-finite channels, channels_first's per-column statistics),
ContrastLimitedAdaptiveHistogramEqualization (grids that do and do not divide the image,
clip limits, value ranges, channels_first), Equalization and MaxNumBoundingBoxes (the identity on
images at inference), masks ending there, and integer images refused at load."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras
from spatial_helpers import assert_layer_matches, layer_spec

import kerasgl as kg
from kerasgl.layers.preprocessing.image_adjust import CLAHE, AutoContrast, IdentityOnImages

L = keras.layers


def _images(shape, low=0.0, high=255.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype("float32")


def test_auto_contrast(tmp_path):
    inputs = keras.Input((6, 5, 3))
    model = keras.Model(inputs, [L.AutoContrast()(inputs),
                                 L.AutoContrast(value_range=(1, -1))(inputs),
                                 L.AutoContrast(value_range=(0, 1))(inputs),
                                 L.AutoContrast(value_range=(0, 255),
                                                data_format="channels_first")(inputs)],
                        name="auto_contrast")
    images = _images((3, 6, 5, 3), -1.0, 1.0)
    images[1, :, :, 2] = 0.25             # a constant channel stays as it was
    images[2] *= 0.1
    expected = assert_matches_keras(model, tmp_path, inputs=[images], randomize=False)
    assert not np.allclose(expected[1], images)


def test_auto_contrast_non_finite(tmp_path):
    inputs = keras.Input((4, 4, 2))
    model = keras.Model(inputs, L.AutoContrast(value_range=(0, 1))(inputs), name="ac_nan")
    images = _images((3, 4, 4, 2), 0.0, 1.0)
    images[0, 1, 2, 0], images[1, 0, 0, 1], images[2, 3, 3, 1] = np.nan, np.inf, -np.inf
    assert_matches_keras(model, tmp_path, inputs=[images], randomize=False, formats=(".keras",))


def test_clahe(tmp_path):
    clahe = L.ContrastLimitedAdaptiveHistogramEqualization
    inputs = keras.Input((13, 10, 3))
    model = keras.Model(inputs, [clahe()(inputs), clahe(tile_grid_size=(2, 3))(inputs),
                                 clahe(clip_limit=0.0, tile_grid_size=(4, 4))(inputs),
                                 clahe(clip_limit=1.5, tile_grid_size=(5, 2))(inputs),
                                 clahe(value_range=(0, 1), tile_grid_size=(3, 3))(inputs),
                                 clahe(tile_grid_size=(2, 2),
                                       data_format="channels_first")(inputs)],
                        name="clahe")
    images = _images((2, 13, 10, 3), -10.0, 265.0)
    images[0, 0, 0, 0], images[1, 2, 3, 1] = np.nan, np.inf
    assert_matches_keras(model, tmp_path, inputs=[images], randomize=False)
    # A grid finer than the image: tiles of one pixel, padding past the image's own size.
    inputs = keras.Input((5, 3, 2))
    small = keras.Model(inputs, [clahe()(inputs), clahe(tile_grid_size=(2, 7))(inputs)],
                        name="clahe_small")
    assert_matches_keras(small, tmp_path, inputs=[_images((2, 5, 3, 2), seed=3)],
                         randomize=False, formats=(".keras",))


def test_equalization_is_identity():
    """Keras 3 cannot build Equalization into a model (its output spec is its input tensor, which
    makes the graph a cycle): the layer is compared with Keras's own call at inference."""
    x = _images((2, 6, 5, 3))
    for keras_layer in (L.Equalization(), L.Equalization(value_range=(0, 1), bins=16,
                                                         data_format="channels_first")):
        expected = np.asarray(keras_layer(x, training=False))
        np.testing.assert_array_equal(expected, x)
        assert_layer_matches(IdentityOnImages(layer_spec(keras_layer), 3), x, expected)


def test_max_num_bounding_boxes_on_images(tmp_path):
    inputs = keras.Input((6, 6, 3))
    x = L.MaxNumBoundingBoxes(max_number=3, fill_value=-2)(L.Rescaling(2.0)(inputs))
    model = keras.Model(inputs, L.Rescaling(0.5)(x), name="max_boxes")
    images = _images((2, 6, 6, 3))
    expected = assert_matches_keras(model, tmp_path, inputs=[images], randomize=False)
    np.testing.assert_array_equal(expected[0], images)


def test_masks_end_here(tmp_path):
    steps_in, images_in = keras.Input((6, 3)), keras.Input((4, 5, 3))
    masked, masked_images = L.Masking()(steps_in), L.Masking()(images_in)
    boxes = L.MaxNumBoundingBoxes(max_number=2)(L.Rescaling(2.0)(masked))
    outputs = [L.GlobalAveragePooling1D()(masked), L.GlobalAveragePooling1D()(boxes),
               L.GlobalAveragePooling2D()(L.AutoContrast()(masked_images))]
    model = keras.Model([steps_in, images_in], outputs, name="masked_adjust")
    steps, images = _images((2, 6, 3), seed=1), _images((2, 4, 5, 3), seed=2)
    steps[:, 4:] = 0.0
    images[:, 3] = 0.0
    expected = assert_matches_keras(model, tmp_path, inputs=[steps, images], randomize=False)
    assert not np.allclose(2.0 * expected[0], expected[1])     # the mask ended at the layer


def test_unbatched_rank_refused(tmp_path):
    for layer in (L.AutoContrast(), L.ContrastLimitedAdaptiveHistogramEqualization()):
        model = keras.Sequential([keras.Input((6, 3)), layer], name=f"rank3_{layer.name}")
        path = str(tmp_path / f"{model.name}.keras")
        model.save(path)
        with pytest.raises(kg.UnsupportedLayerError, match=f"{layer.name}.*rank 3"):
            kg.load_model(path)


@pytest.mark.parametrize("layer", [L.AutoContrast(), L.MaxNumBoundingBoxes(3),
                                   L.ContrastLimitedAdaptiveHistogramEqualization()])
def test_integer_images_refused(layer, tmp_path):
    model = keras.Sequential([keras.Input((4, 4, 3), dtype="int32"), layer])
    path = str(tmp_path / "int_images.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError, match=layer.name):
        kg.load_model(path)


def test_texture_input():
    x = _images((2, 7, 9, 4))
    for keras_layer, cls in [(L.AutoContrast(value_range=(0, 100)), AutoContrast),
                             (L.ContrastLimitedAdaptiveHistogramEqualization(
                                 tile_grid_size=(2, 3)), CLAHE)]:
        ours = cls(layer_spec(keras_layer), 3)
        assert_layer_matches(ours, x, np.asarray(keras_layer(x, training=False)),
                             storage="texture")
