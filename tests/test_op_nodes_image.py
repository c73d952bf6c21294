"""keras.ops.image operations recorded in Keras 3 graphs, against Keras's predict (.keras and .h5):
resize (nearest / bilinear, antialias, crop / pad to aspect ratio, channels_first),
crop_images / pad_images (every way to give the sizes), rgb_to_grayscale, rgb_to_hsv and back
(also of rank-3 tensors), gaussian_blur, sobel_edges, extract_patches, affine_transform (every
fill mode, nearest and bilinear), perspective_transform, ssim, and what is refused at load
(rank-3 images where rows mix, area resizing, rank-2 points, map_coordinates,
elastic_transform)."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg

ops = keras.ops
image = keras.ops.image


def _model(shape, build, name, batch_shape=None):
    inputs = keras.Input(shape, batch_size=batch_shape)
    outputs = build(inputs)
    return keras.Model(inputs, outputs, name=name)


def _images(shape, low=-1.0, high=1.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype("float32")


def test_resize(tmp_path):
    model = _model((9, 6, 3), lambda x: [
        image.resize(x, (4, 5)), image.resize(x, (11, 7), interpolation="nearest"),
        image.resize(x, (4, 4), antialias=True),
        image.resize(x, (3, 8), crop_to_aspect_ratio=True),
        image.resize(x, (5, 2), pad_to_aspect_ratio=True, fill_value=0.5),
        image.resize(ops.transpose(x, (0, 3, 1, 2)), (4, 3), data_format="channels_first")],
        "resize")
    assert_matches_keras(model, tmp_path, inputs=[_images((2, 9, 6, 3))])


def test_pad_and_crop_images(tmp_path):
    model = _model((7, 6, 2), lambda x: [
        image.pad_images(x, 1, 2, 3, 0), image.pad_images(x, top_padding=2, left_padding=1,
                                                          target_height=12, target_width=9),
        image.pad_images(x, bottom_padding=1, right_padding=2, target_height=9, target_width=8),
        image.crop_images(x, 1, 2, 3, 0), image.crop_images(x, top_cropping=2, left_cropping=1,
                                                            target_height=4, target_width=3),
        image.crop_images(x, bottom_cropping=1, right_cropping=2, target_height=5,
                          target_width=3),
        image.crop_images(ops.transpose(x, (0, 3, 1, 2)), 1, 1, 2, 2,
                          data_format="channels_first"),
        image.pad_images(ops.transpose(x, (0, 3, 1, 2)), 1, 0, 0, 2,
                         data_format="channels_first")], "pad_crop")
    assert_matches_keras(model, tmp_path, inputs=[_images((2, 7, 6, 2))])


def test_colour_conversions(tmp_path):
    model = _model((5, 4, 3), lambda x: [
        image.rgb_to_grayscale(x), image.rgb_to_hsv(x), image.hsv_to_rgb(x),
        image.hsv_to_rgb(image.rgb_to_hsv(x)),
        image.rgb_to_grayscale(image.rgb_to_grayscale(x)),
        image.rgb_to_hsv(ops.transpose(x, (0, 3, 1, 2)), data_format="channels_first"),
        image.rgb_to_grayscale(ops.transpose(x, (0, 3, 1, 2)), data_format="channels_first")],
        "colours")
    images = _images((3, 5, 4, 3), 0.0, 1.0)
    images[0, 0, 0] = (0.5, 0.5, 0.5)        # grey: no hue
    images[0, 0, 1] = (0.0, 0.0, 0.0)
    images[0, 0, 2] = (0.9, 0.2, 0.9)        # ties of the maximum
    images[0, 0, 3] = (0.3, 0.7, 0.7)
    images[1, 1] = (1e-8, -0.2, 1.5)          # near zero; outside [0, 1]
    images[2] = -images[2]                    # negative hues for hsv_to_rgb
    assert_matches_keras(model, tmp_path, inputs=[images])


def test_colour_conversions_of_rank_3(tmp_path):
    """A rank-3 tensor is one image to Keras (its rows the batch): per-pixel conversions take it,
    the ops that mix rows refuse it at load."""
    model = _model((4, 3), lambda x: [image.rgb_to_grayscale(x), image.rgb_to_hsv(x),
                                      image.hsv_to_rgb(x)], "colours_rank3")
    assert_matches_keras(model, tmp_path, inputs=[_images((3, 4, 3), 0.0, 1.0)])
    for name, build in [("resize", lambda x: image.resize(x, (2, 2))),
                        ("gaussian_blur", image.gaussian_blur),
                        ("pad_images", lambda x: image.pad_images(x, 0, 1, 0, 1))]:
        model = _model((4, 3), build, f"rank3_{name}")
        with pytest.raises(kg.UnsupportedLayerError, match="rank 3"):
            kg.load_model(_saved(tmp_path, model))


def test_gaussian_blur_and_sobel(tmp_path):
    model = _model((8, 7, 3), lambda x: [
        image.gaussian_blur(x), image.gaussian_blur(x, kernel_size=(5, 3), sigma=(2.0, 0.7)),
        image.gaussian_blur(x, kernel_size=(4, 4), sigma=(1.5, 1.5)),
        image.gaussian_blur(ops.transpose(x, (0, 3, 1, 2)), kernel_size=(3, 5), sigma=(1.0, 3.0),
                            data_format="channels_first"),
        image.sobel_edges(x),
        image.sobel_edges(ops.transpose(x, (0, 3, 1, 2)), data_format="channels_first")],
        "filters")
    assert_matches_keras(model, tmp_path, inputs=[_images((2, 8, 7, 3))])


def test_extract_patches(tmp_path):
    model = _model((8, 9, 2), lambda x: [
        image.extract_patches(x, 2), image.extract_patches(x, (3, 2), strides=(2, 3)),
        image.extract_patches(x, 3, strides=1, dilation_rate=2),
        image.extract_patches(x, (3, 3), strides=2, padding="same"),
        image.extract_patches(ops.transpose(x, (0, 3, 1, 2)), 2, data_format="channels_first")],
        "patches")
    assert_matches_keras(model, tmp_path, inputs=[_images((2, 8, 9, 2))])


def _affine_model(name, **options):
    images, transform = keras.Input((7, 6, 3)), keras.Input((8,))
    outputs = [image.affine_transform(images, transform, **options),
               image.affine_transform(ops.transpose(images, (0, 3, 1, 2)), transform,
                                      data_format="channels_first", **options)]
    return keras.Model([images, transform], outputs, name=name)


@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
def test_affine_transform(fill_mode, tmp_path):
    rng = np.random.default_rng(7)
    angle = rng.uniform(-0.6, 0.6, 3)
    transforms = np.stack([np.cos(angle) * 1.3, -np.sin(angle), rng.uniform(-4, 4, 3),
                           np.sin(angle), np.cos(angle) * 0.8, rng.uniform(-4, 4, 3),
                           rng.uniform(-0.3, 0.3, 3), rng.uniform(-0.3, 0.3, 3)], 1)
    transforms = transforms.astype("float32")
    images = _images((3, 7, 6, 3))
    for interpolation in ("bilinear", "nearest"):
        model = _affine_model(f"affine_{fill_mode}_{interpolation}", fill_mode=fill_mode,
                              fill_value=0.5, interpolation=interpolation)
        assert_matches_keras(model, tmp_path, inputs=[images, transforms])


def test_perspective_transform(tmp_path):
    images, start, end = keras.Input((8, 9, 3)), keras.Input((4, 2)), keras.Input((4, 2))
    outputs = [image.perspective_transform(images, start, end),
               image.perspective_transform(images, start, end, interpolation="nearest",
                                           fill_value=0.5),
               image.perspective_transform(ops.transpose(images, (0, 3, 1, 2)), start, end,
                                           data_format="channels_first")]
    model = keras.Model([images, start, end], outputs, name="perspective")
    rng = np.random.default_rng(4)
    corners = np.array([[0, 0], [8, 0], [0, 7], [8, 7]], "float32")
    start_points = (corners + rng.uniform(-2, 2, (3, 4, 2))).astype("float32")
    end_points = (corners + rng.uniform(-2, 2, (3, 4, 2))).astype("float32")
    assert_matches_keras(model, tmp_path, inputs=[_images((3, 8, 9, 3)), start_points, end_points])


def test_perspective_points_of_rank_2_refused(tmp_path):
    images, points = keras.Input((8, 9, 3), batch_size=4), keras.Input((2,), batch_size=4)
    model = keras.Model([images, points], image.perspective_transform(images, points, points),
                        name="perspective_rank2")
    with pytest.raises(kg.UnsupportedLayerError, match="start_points of rank 2"):
        kg.load_model(_saved(tmp_path, model))


def test_ssim(tmp_path):
    first, second = keras.Input((12, 13, 3)), keras.Input((12, 13, 3))
    outputs = [image.ssim(first, second), image.ssim(first, first),
               image.ssim(first, second, max_val=2.0, filter_size=5, filter_sigma=0.8, k1=0.02,
                          k2=0.05),
               image.ssim(ops.transpose(first, (0, 3, 1, 2)), ops.transpose(second, (0, 3, 1, 2)),
                          filter_size=7, data_format="channels_first")]
    model = keras.Model([first, second], outputs, name="ssim")
    a = _images((3, 12, 13, 3), 0.0, 1.0, seed=1)
    b = np.clip(a + _images((3, 12, 13, 3), -0.2, 0.2, seed=2), 0.0, 1.0)
    assert_matches_keras(model, tmp_path, inputs=[a, b])


def _saved(tmp_path, model):
    path = str(tmp_path / f"{model.name}.keras")
    model.save(path)
    return path


@pytest.mark.parametrize("name, build", [
    ("Resize", lambda x: image.resize(x, (4, 4), interpolation="area")),
    ("MapCoordinates", lambda x: image.map_coordinates(
        x[:, :, :, 0], ops.zeros((3, 2, 4, 4)), 1)),
    ("ElasticTransform", lambda x: image.elastic_transform(x)),
])
def test_refused_at_load(name, build, tmp_path):
    """(Keras cannot save a scale_and_translate node: refused too, untestable from a file.)"""
    model = _model((4, 4, 3), build, f"refused_{name.lower()}", batch_shape=2)
    with pytest.raises(kg.UnsupportedLayerError, match=name) as error:
        kg.load_model(_saved(tmp_path, model))
    reasons = {"Resize": "area", "ElasticTransform": "random", "MapCoordinates": "batch"}
    assert reasons[name] in str(error.value)


def test_texture_input(tmp_path):
    """A texture-stored model input reaches every kind of image op."""
    model = _model((8, 9, 3), lambda x: [
        image.resize(x, (4, 5)), image.pad_images(x, 1, 2, 0, 0), image.rgb_to_hsv(x),
        image.gaussian_blur(x), image.sobel_edges(x), image.extract_patches(x, 2),
        image.ssim(x, x * 0.5, filter_size=3),
        image.affine_transform(x, ops.ones_like(x[:, 0, :8, 0]) * 0.1)], "texture_input")
    x = _images((2, 8, 9, 3), 0.0, 1.0)
    expected = model.predict(x, verbose=0)
    with kg.load_model(_saved(tmp_path, model)) as loaded, kg.tidy():
        for actual, wanted in zip(loaded.predict(kg.tensor(x, storage="texture")), expected):
            np.testing.assert_allclose(actual.numpy(), wanted, atol=1e-4, rtol=1e-4)


def test_affine_transform_of_rank_1_refused(tmp_path):
    model = _model((4, 4, 3), lambda x: image.affine_transform(x, x[0, 0, :8, 0]), "affine_rank1",
                   batch_shape=1)
    with pytest.raises(kg.UnsupportedLayerError, match="transform of rank 1"):
        kg.load_model(_saved(tmp_path, model))
