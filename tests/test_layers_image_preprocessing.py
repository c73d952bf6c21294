"""Image preprocessing layers against Keras 3 (.keras and .h5), as predict runs them: Resizing
(bilinear, nearest, bicubic, lanczos3, lanczos5; up- and downscaling, odd sizes, antialias,
crop_to_aspect_ratio, pad_to_aspect_ratio, channels_first), CenterCrop (cropping, and
smart_resize where the input is smaller), the random augmentation layers (the identity at
inference, RandomCrop of any input size included; masks end there), non-finite inputs,
texture-stored inputs, and what is refused at load (the TensorFlow backend's interpolations,
integer images)."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras
from spatial_helpers import F, assert_branches_match_keras, assert_layer_matches, layer_spec

import kerasgl as kg
from kerasgl.layers.preprocessing.image_preprocessing import CenterCrop, Resizing

L = keras.layers


@pytest.mark.parametrize("channels", [3, 4])
def test_resizing_bilinear_and_nearest(channels, tmp_path):
    layers = [L.Resizing(3, 4, name="down"), L.Resizing(11, 9, name="up"),
              L.Resizing(7, 5, name="same"), L.Resizing(2, 13, name="down_up"),
              L.Resizing(1, 1, name="one_pixel"),
              L.Resizing(3, 4, interpolation="nearest", name="nearest_down"),
              L.Resizing(11, 9, interpolation="nearest", name="nearest_up"),
              L.Resizing(5, 12, interpolation="nearest", name="nearest_mixed")]
    assert_branches_match_keras(tmp_path, (7, 5, channels), layers, f"resizing_c{channels}")


def test_resizing_large_downscale_and_antialias(tmp_path):
    layers = [L.Resizing(4, 5, name="down"), L.Resizing(4, 5, antialias=True, name="down_aa"),
              L.Resizing(6, 30, antialias=True, name="mixed_aa"),
              L.Resizing(3, 2, antialias=True, name="far_down_aa"),
              L.Resizing(40, 25, antialias=True, name="up_aa"),
              L.Resizing(4, 5, interpolation="nearest", antialias=True, name="nearest_aa")]
    assert_branches_match_keras(tmp_path, (17, 12, 4), layers, "resizing_antialias")


def test_resizing_pad_to_aspect_ratio(tmp_path):
    layers = [L.Resizing(4, 4, pad_to_aspect_ratio=True, fill_value=0.5, name="square_odd"),
              L.Resizing(3, 8, pad_to_aspect_ratio=True, name="wide"),
              L.Resizing(12, 5, pad_to_aspect_ratio=True, fill_value=-2.0, name="tall_up"),
              L.Resizing(9, 6, pad_to_aspect_ratio=True, name="same"),
              L.Resizing(5, 2, interpolation="nearest", pad_to_aspect_ratio=True, fill_value=3.0,
                         name="nearest"),
              L.Resizing(8, 3, pad_to_aspect_ratio=True, antialias=True, name="down_aa"),
              L.Resizing(2, 7, pad_to_aspect_ratio=True, fill_value=1.0,
                         data_format="channels_first", name="cf_pad")]
    assert_branches_match_keras(tmp_path, (9, 6, 4), layers, "resizing_pad")


def test_resizing_crop_to_aspect_ratio_and_channels_first(tmp_path):
    layers = [L.Resizing(4, 4, crop_to_aspect_ratio=True, name="square"),
              L.Resizing(3, 8, crop_to_aspect_ratio=True, name="wide"),
              L.Resizing(12, 5, crop_to_aspect_ratio=True, name="tall_up"),
              L.Resizing(5, 2, interpolation="nearest", crop_to_aspect_ratio=True, name="nearest"),
              L.Resizing(4, 5, data_format="channels_first", name="cf"),
              L.Resizing(2, 7, crop_to_aspect_ratio=True, data_format="channels_first",
                         name="cf_crop")]
    assert_branches_match_keras(tmp_path, (9, 6, 3), layers, "resizing_crop")


@pytest.mark.parametrize("interpolation, channels", [
    ("bicubic", 3), ("lanczos3", 4), ("lanczos5", 3)])
def test_resizing_kernel_methods(interpolation, channels, tmp_path):
    """jax.image.resize's Keys cubic and Lanczos kernels: up, down, mixed, one axis kept (jax
    skips it), the same size, antialiased (wider kernels downscaling, plain ones upscaling),
    crop_to_aspect_ratio, pad_to_aspect_ratio and channels_first."""
    def resizing(height, width, name, **options):
        return L.Resizing(height, width, interpolation=interpolation, name=name, **options)
    layers = [resizing(4, 5, "down"), resizing(23, 19, "up"), resizing(6, 30, "mixed"),
              resizing(17, 7, "rows_kept"), resizing(17, 12, "same"), resizing(1, 1, "one_pixel"),
              resizing(4, 5, "down_aa", antialias=True), resizing(3, 2, "far_down_aa",
                                                                  antialias=True),
              resizing(6, 30, "mixed_aa", antialias=True),
              resizing(23, 19, "up_aa", antialias=True),
              resizing(3, 8, "crop", crop_to_aspect_ratio=True),
              resizing(12, 12, "crop_same", crop_to_aspect_ratio=True),
              resizing(5, 9, "pad", pad_to_aspect_ratio=True, fill_value=0.5),
              resizing(8, 3, "pad_aa", pad_to_aspect_ratio=True, antialias=True, fill_value=-1.0),
              resizing(7, 4, "cf", data_format="channels_first")]
    assert_branches_match_keras(tmp_path, (17, 12, channels), layers,
                                f"resizing_{interpolation}")


@pytest.mark.parametrize("channels", [3, 4])
def test_center_crop(channels, tmp_path):
    layers = [L.CenterCrop(5, 4, name="crop"), L.CenterCrop(9, 6, name="same"),
              L.CenterCrop(4, 1, name="crop_odd"), L.CenterCrop(12, 5, name="short"),
              L.CenterCrop(3, 8, name="narrow"), L.CenterCrop(11, 10, name="small"),
              L.CenterCrop(2, 3, data_format="channels_first", name="cf_crop"),
              L.CenterCrop(12, 4, data_format="channels_first", name="cf_resize")]
    assert_branches_match_keras(tmp_path, (9, 6, channels), layers, f"center_crop_c{channels}")


def _assert_identity_chain(tmp_path, layers, name, formats=(".keras", ".h5")):
    """The layers one after another, then a Resizing, on images in [0, 255)."""
    inputs = keras.Input((8, 8, 3))
    x = inputs
    for layer in layers:
        x = layer(x)
    model = keras.Model(inputs, L.Resizing(5, 6)(x), name=name)
    images = np.random.default_rng(3).uniform(0, 255, (2, 8, 8, 3)).astype("float32")
    # No weights to randomise (only the seed generators' state, which predict never reads).
    expected = assert_matches_keras(model, tmp_path, inputs=[images], randomize=False,
                                    formats=formats)
    assert not np.allclose(expected[0], 0.0)


def test_random_augmentations_are_identity(tmp_path):
    _assert_identity_chain(tmp_path, [
        L.RandomFlip(), L.RandomRotation(0.3), L.RandomZoom(0.2), L.RandomContrast(0.5),
        L.RandomTranslation(0.2, 0.1), L.RandomShear(0.2), L.RandomPerspective(),
        L.RandomElasticTransform(), L.RandomColorJitter(brightness_factor=0.2), L.RandomHue(0.3),
        L.RandomGrayscale(), L.RandomInvert(), L.RandomErasing(), L.RandomGaussianBlur(),
        L.MixUp(), L.CutMix(), L.AugMix(), L.RandAugment(), L.RandomCrop(8, 8)], "augmentations")


def test_random_augmentations_keras_saves_as_keras_only(tmp_path):
    # Keras cannot save these as .h5 (their configs deep-copy a module).
    _assert_identity_chain(tmp_path, [
        L.RandomBrightness(0.4), L.RandomColorDegeneration(0.3), L.RandomSaturation(0.3),
        L.RandomSharpness(0.3), L.RandomPosterization(4),
        L.Solarization(0.5, threshold_factor=0.2)], "augmentations_keras", formats=(".keras",))


def test_mixing_augmentations_non_default_options_are_identity(tmp_path):
    """AugMix, CutMix, MixUp, RandAugment and Solarization change images only when training,
    whatever their options and seeds."""
    _assert_identity_chain(tmp_path, [
        L.AugMix(value_range=(0, 1), num_chains=2, chain_depth=1, factor=0.5, alpha=0.5,
                 all_ops=False, interpolation="nearest", seed=3),
        L.CutMix(factor=0.5, seed=1), L.MixUp(alpha=0.6, seed=2),
        L.RandAugment(value_range=(0, 1), num_ops=3, factor=0.8, interpolation="nearest",
                      seed=4)], "mixing_augmentations")
    _assert_identity_chain(tmp_path, [
        L.Solarization(addition_factor=0.3, threshold_factor=0.4, value_range=(0, 1), seed=5),
        L.CutMix(factor=(0.2, 0.9), data_format="channels_first", seed=6)],
        "solarization_options", formats=(".keras",))


def test_masks_end_at_augmentations(tmp_path):
    """Keras 3 drops a mask at these layers (values unchanged); the branch that does not pass
    through one keeps it."""
    inputs = keras.Input((6, 3))
    masked = L.Masking()(inputs)
    outputs = [L.GlobalAveragePooling1D()(masked)]
    for layer in (L.RandomFlip(), L.RandomContrast(0.3), L.RandomZoom(0.2)):
        outputs.append(L.GlobalAveragePooling1D()(layer(masked)))
    model = keras.Model(inputs, outputs, name="masked_augmentations")
    steps = np.random.default_rng(5).uniform(-1, 1, (2, 6, 3)).astype("float32")
    steps[:, 4:] = 0.0
    expected = assert_matches_keras(model, tmp_path, inputs=[steps], randomize=False)
    assert not np.allclose(expected[0], expected[1])


def test_non_finite_images(tmp_path):
    """Keras's bilinear resize makes a whole channel of an image NaN for one NaN or infinity in
    the window it resizes; kerasgl's kernel does not, so such numpy inputs are refused at
    predict. Nearest resizing and cropping keep NaN where Keras does."""
    images = np.random.default_rng(6).uniform(-1, 1, (2, 6, 5, 3)).astype("float32")
    images[0, 2, 3, 1], images[1, 0, 0, 2] = np.nan, np.inf
    inputs = keras.Input((6, 5, 3))
    exact = keras.Model(inputs, [L.Resizing(4, 7, interpolation="nearest")(inputs),
                                 L.CenterCrop(3, 4)(inputs), L.RandomFlip()(inputs)], name="exact")
    assert_matches_keras(exact, tmp_path, inputs=[images], randomize=False)
    for layer in (L.Resizing(4, 7), L.CenterCrop(8, 4), L.Resizing(3, 7, interpolation="lanczos3")):
        model = keras.Sequential([keras.Input((6, 5, 3)), layer], name=f"nan_{layer.name}")
        assert np.isnan(model.predict(images, verbose=0)[0, :, :, 1]).all()   # the NaN's channel
        with kg.load_model(_saved(tmp_path, model)) as loaded:
            with pytest.raises(kg.InputValueError, match=layer.name):
                loaded.predict(images, verbose=0)
            finite = np.nan_to_num(images, posinf=0.0)
            np.testing.assert_allclose(loaded.predict(finite, verbose=0),
                                       model.predict(finite, verbose=0), atol=1e-4, rtol=1e-4)


def test_texture_input():
    x = np.random.default_rng(0).uniform(-1, 1, (2, 7, 9, 4)).astype("float32")
    for keras_layer, cls in [(L.Resizing(4, 13, crop_to_aspect_ratio=True), Resizing),
                             (L.Resizing(5, 3, interpolation="bicubic", antialias=True),
                              Resizing),
                             (L.CenterCrop(8, 5), CenterCrop), (L.CenterCrop(3, 4), CenterCrop)]:
        ours = cls(layer_spec(keras_layer), 3)
        assert_layer_matches(ours, x, np.asarray(keras_layer(x)), storage="texture")


def _saved(tmp_path, model, fmt=".keras"):
    path = str(tmp_path / f"{model.name}{fmt}")
    model.save(path)
    return path


@pytest.mark.parametrize("interpolation", ["area", "gaussian", "mitchellcubic"])
def test_unsupported_options_refused_at_load(interpolation, tmp_path):
    """Keras's TensorFlow backend's methods: Keras on JAX refuses them when it runs."""
    layer = L.Resizing(4, 4, interpolation=interpolation)
    match = f"interpolation='{interpolation}'"
    model = keras.Sequential([keras.Input((6, 5, 3)), layer], name="refused")
    for fmt in (".keras", ".h5"):
        with pytest.raises(kg.UnsupportedLayerError, match=match):
            kg.load_model(_saved(tmp_path, model, fmt))


def test_integer_images_refused_at_load(tmp_path):
    inputs = keras.Input((6, 5, 3), dtype="int32")
    for layer in (L.RandomFlip(), L.Resizing(3, 3), L.CenterCrop(2, 2)):
        model = keras.Model(inputs, layer(inputs), name=f"int_{layer.name}")
        with pytest.raises(kg.UnsupportedLayerError, match="int32 input"):
            kg.load_model(_saved(tmp_path, model))


def test_random_crop_returns_the_images_as_keras_predict_does(tmp_path):
    """Keras 3's RandomCrop crops only when training (keras-team/keras#21868): predict returns
    the images as they are, smaller, larger or of another aspect ratio than the crop, although the
    layer declares a (height, width) output, and the following layers get them so."""
    inputs = keras.Input((6, 5, 3))
    outputs = [L.RandomCrop(3, 4)(inputs), L.RandomCrop(8, 8)(inputs),
               L.RandomCrop(6, 5)(inputs), L.RandomCrop(2, 3, data_format="channels_first")(inputs),
               L.GlobalAveragePooling2D()(F.Conv2D(2, 3)(L.RandomCrop(4, 4)(inputs)))]
    model = keras.Model(inputs, outputs, name="random_crop")
    images = np.random.default_rng(0).uniform(-1, 1, (2, 6, 5, 3)).astype("float32")
    expected = assert_matches_keras(model, tmp_path, inputs=[images])
    for out in expected[:4]:
        np.testing.assert_array_equal(out, images)
    # Keras declares the crop's size; kerasgl's shapes are those its predict gives.
    assert model.output_shape[0] == (None, 3, 4, 3)
    with kg.load_model(_saved(tmp_path, model)) as loaded:
        assert loaded.output_shape[0] == (None, 6, 5, 3)


def test_resizing_256_to_224_in_front_of_a_real_classifier(tmp_path):
    """What users save: a 256x256 image resized to 224x224 (bilinear) and scaled to [-1, 1], then
    a MobileNetV2 (weights=None, BatchNorm statistics as tests/test_applications.py makes them):
    logits as Keras's within 1e-4."""
    from test_applications import random_batchnorm_statistics, randomize_non_kernels
    keras.utils.set_random_seed(0)
    pixels = np.random.default_rng(4).uniform(0, 255, (16, 256, 256, 3)).astype(np.float32)
    front = keras.Sequential([keras.Input((256, 256, 3)), L.Resizing(224, 224, name="resize"),
                              L.Rescaling(1 / 127.5, offset=-1, name="scale")], name="front")
    backbone = keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), alpha=0.35,
                                              classes=10, classifier_activation=None)
    randomize_non_kernels(backbone)
    random_batchnorm_statistics(backbone, np.asarray(front(pixels)))
    images = keras.Input((256, 256, 3), name="image")
    model = keras.Model(images, backbone(front(images)), name="resized_classifier")
    assert_matches_keras(model, tmp_path, inputs=[pixels[:2]], randomize=False)
