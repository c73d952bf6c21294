"""Every keras.applications model of Keras 3.15 against Keras itself.

Built with weights=None (nothing is downloaded) and a small `classes`, at the smallest input each
accepts with include_top=True (VGG at 224, where fc1 is larger than a storage block:
tests/test_large_weights.py), with random normalisation parameters, biases and ConvNeXt's layer
scales, and BatchNormalization statistics of random images moved at random (so no BN is the
identity and no residual branch is scaled to nothing), the classifier scaled to logits of unit
size, saved as .keras and .h5. Logits are compared (classifier_activation=None), within
keras_ref's 1e-4 (+ 1e-4 relative). The test models are chosen so that float32 itself holds that
tolerance: scripts/application_conditioning.py measures Keras's float32 logits against its
float64 ones on them (a model on which Keras's own float32 misses by more would test rounding,
not kerasgl).

By default a representative few run, each in one format, both formats across them;
`pytest --applications=all` runs all 40 in both formats (about an hour on 2 cores).
"""
import os
import time

import numpy as np
import pytest

from keras_ref import ATOL, RTOL, assert_close, assert_matches_keras, keras

import kerasgl as kg

# name: input size. Models whose preprocessing is inside them (EfficientNet, EfficientNetV2,
# MobileNetV3, ConvNeXt) take 0..255 pixels; the others [-1, 1].
APPLICATIONS = {
    "ConvNeXtTiny": 32, "ConvNeXtSmall": 32, "ConvNeXtBase": 32, "ConvNeXtLarge": 32,
    "ConvNeXtXLarge": 32,
    "DenseNet121": 32, "DenseNet169": 32, "DenseNet201": 32,
    "EfficientNetB0": 32, "EfficientNetB1": 32, "EfficientNetB2": 32, "EfficientNetB3": 32,
    "EfficientNetB4": 32, "EfficientNetB5": 32, "EfficientNetB6": 32, "EfficientNetB7": 32,
    "EfficientNetV2B0": 32, "EfficientNetV2B1": 32, "EfficientNetV2B2": 32, "EfficientNetV2B3": 32,
    "EfficientNetV2S": 32, "EfficientNetV2M": 32, "EfficientNetV2L": 32,
    "InceptionResNetV2": 75, "InceptionV3": 75,
    "MobileNet": 32, "MobileNetV2": 32, "MobileNetV3Small": 32, "MobileNetV3Large": 32,
    "NASNetMobile": 32, "NASNetLarge": 32,
    "ResNet50": 32, "ResNet101": 32, "ResNet152": 32,
    "ResNet50V2": 32, "ResNet101V2": 32, "ResNet152V2": 32,
    "VGG16": 224, "VGG19": 224,
    "Xception": 71,
}
RAW_PIXELS = ("ConvNeXt", "EfficientNet", "MobileNetV3")
# The default run: one of each family that needed its own layers or ops, each in one format.
DEFAULT = {"VGG16": ".keras", "ConvNeXtTiny": ".h5", "InceptionResNetV2": ".keras",
           "MobileNetV3Small": ".h5", "EfficientNetV2B0": ".keras", "NASNetMobile": ".h5"}
CLASSES = 10
FORMATS = (".keras", ".h5")


def randomize_non_kernels(model, seed=0):
    """Random normalisation parameters, biases and layer scales (Keras initialises them to ones
    and zeros, and ConvNeXt's layer scales to 1e-6); kernels keep Keras's initialisers.

    Betas are positive (0.2..0.6 of a unit-scale output), so that most units after a
    normalisation pass a ReLU. With betas about zero, half of every layer's units were cut at
    random, and such a random network amplifies rounding from layer to layer (the batch
    normalisation "gradient explosion" of mean-field theory, about 1.2x a ReLU layer): Keras's own
    float32 logits were 1.6e-3 from its float64 ones on ResNet101 and 2.1e-3 on ResNet152, ten
    times the tolerance; with these betas 4e-5 and 1.2e-4 (scripts/application_conditioning.py)."""
    rng = np.random.default_rng(seed)
    ranges = {"gamma": (0.5, 1.5), "beta": (0.2, 0.6), "bias": (-0.1, 0.1)}
    for layer in model.layers:
        for var in layer.weights:
            name = var.path.rsplit("/", 1)[-1]
            if name in ranges and "float" in str(var.dtype):
                var.assign(rng.uniform(*ranges[name], size=var.shape).astype("float32"))


def random_batchnorm_statistics(model, calibration, seed=0):
    """Every BatchNormalization's moving mean and variance: those of its input over the batch
    `calibration` in inference mode, then moved at random (mean by up to 0.1 standard
    deviations, variance by a factor 0.8..1.25), so that no BN is the identity.

    One eager pass through the graph, in order: each BN takes the statistics of the input it
    gets at inference, with every BN before it already set (and moved), so that, as in a trained
    network, its output over the batch has about its gamma's scale and beta's offset. Statistics
    of a training-mode pass (every BN normalising with its batch's own) or unrelated to the data
    (uniform in 0.5..1.5, say) do not hold once the BNs before have been moved: the mismatch
    compounds from block to block, and the deeper models' logits reached hundreds or thousands,
    where float32 itself loses them (EfficientNetB1's Keras float32 logits were 3.8 from its
    float64 ones, EfficientNetV2S's 25.7)."""
    norms = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]
    if not norms:
        return
    from keras.src.models.functional import operation_fn
    rng = np.random.default_rng(seed)
    ids = {id(layer) for layer in norms}

    def calibrated(layer):
        def call(x, *args, **kwargs):
            axes = layer.axis if isinstance(layer.axis, (list, tuple)) else [layer.axis]
            axes = [a % len(x.shape) for a in axes]
            data = np.asarray(x, np.float64)
            reduce = tuple(a for a in range(data.ndim) if a not in axes)
            mean, variance = data.mean(axis=reduce), data.var(axis=reduce)
            # A channel constant over the batch would be divided by sqrt(epsilon): floored.
            variance = np.maximum(variance, 1e-2)
            shape = tuple(np.shape(layer.moving_mean))
            layer.moving_mean.assign((mean + rng.uniform(-0.1, 0.1, mean.shape)
                                      * np.sqrt(variance)).reshape(shape).astype("float32"))
            layer.moving_variance.assign((variance * rng.uniform(0.8, 1.25, variance.shape))
                                         .reshape(shape).astype("float32"))
            return layer(x, *args, **kwargs, training=False)
        return call

    # Keras's own graph runner (what Functional.call does), the BNs intercepted.
    model._run_through_graph(
        [keras.ops.convert_to_tensor(calibration)],
        operation_fn=lambda op: calibrated(op) if id(op) in ids else operation_fn(op, training=False))


def unit_logits(model, calibration):
    """Scales the classifier (the last layer with a kernel: Dense, or MobileNet's 1x1 Conv2D)
    so that the logits over the calibration batch have unit RMS.

    The tolerance is absolute near zero: a logit near 0 of a model whose logits are of size 10
    must be right to 1e-5 of the logits' scale, and float32 itself does not give that through
    700 layers (EfficientNetV2M's Keras float32 logits are 1.7e-5 RMS of their scale from its
    float64 ones: 2.2e-4 at logits up to 12, 1.4x the tolerance). At unit scale the same
    relative error is a fifth of it; the tolerance still asks 1e-4 of the logits' scale."""
    logits = model.predict(calibration, verbose=0)
    rms = float(np.sqrt(np.mean(np.square(logits, dtype=np.float64))))
    classifier = [layer for layer in model.layers
                  if any(var.path.endswith("/kernel") for var in layer.weights)][-1]
    for var in classifier.weights:
        var.assign((np.asarray(var) / rms).astype("float32"))


def build(name, size):
    keras.utils.set_random_seed(0)
    model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3),
                                              classes=CLASSES, classifier_activation=None)
    randomize_non_kernels(model)
    # The batch the statistics come from holds the test image: it is then no outlier to them
    # (at 32x32 the last blocks are 1x1, their statistics over the batch alone). 128 images, not
    # 16: a BN whose statistics come from few samples scales the little those samples differ by
    # up to unit size, and small rounding with it; with 16, EfficientNetB0's Keras float32
    # logits were 4.7e-4 from its float64 ones (of logits up to 9.5: most of the tolerance).
    calibration = np.concatenate([inputs(name, size), inputs(name, size, batch=127, seed=2)])
    random_batchnorm_statistics(model, calibration)
    unit_logits(model, calibration)
    return model


def inputs(name, size, batch=1, seed=1):
    rng = np.random.default_rng(seed)
    low, high = (0, 255) if name.startswith(RAW_PIXELS) else (-1, 1)
    return rng.uniform(low, high, (batch, size, size, 3)).astype("float32")


def _cases(config):
    if config.getoption("--applications") == "all":
        return [(name, FORMATS) for name in APPLICATIONS]
    return [(name, (fmt,)) for name, fmt in DEFAULT.items()]


def pytest_generate_tests(metafunc):
    if "application" in metafunc.fixturenames:
        cases = _cases(metafunc.config)
        metafunc.parametrize("application,formats", cases, ids=[name for name, _ in cases])


def test_application_matches_keras(application, formats, tmp_path):
    size = APPLICATIONS[application]
    start = time.perf_counter()
    model = build(application, size)
    x = inputs(application, size)
    expected = model.predict(x, verbose=0)     # one XLA compile: faster than op by op
    paths = []
    for fmt in formats:
        paths.append(os.path.join(str(tmp_path), f"{application}{fmt}"))
        model.save(paths[-1])
    del model
    for path in paths:
        with kg.load_model(path) as loaded:
            actual = loaded.predict(x, verbose=0)
        os.remove(path)
        diff = np.abs(actual - expected)
        # Of assert_close's tolerance (1e-4 + 1e-4 * |logit|): over 1 fails.
        share = float(np.max(diff / (ATOL + RTOL * np.abs(expected))))
        print(f"\n{application}{os.path.splitext(path)[1]}: worst |diff| {float(diff.max()):.3g} "
              f"(largest |logit| {float(np.max(np.abs(expected))):.3g}; {share:.2f} of the "
              f"tolerance), {time.perf_counter() - start:.1f} s")
        assert_close(actual, expected, what=os.path.basename(path))


def test_every_application_of_this_keras_is_listed():
    """The list above is Keras's: a Keras that adds a model makes this fail until it is added."""
    public = {name for name in dir(keras.applications) if name[0].isupper()}
    assert public == set(APPLICATIONS)


def test_layer_scale_alone_and_folded_into_the_layer_before(tmp_path):
    """ConvNeXt's LayerScale (x * gamma per channel) on an input (its own dispatch) and after a
    linear Dense and a Conv2D (folded into their weights), random gammas, both formats."""
    from keras.src.applications.convnext import LayerScale
    x = keras.Input((5, 5, 8))
    scaled = LayerScale(1e-6, 8)(x)
    dense = LayerScale(0.5, 12)(keras.layers.Dense(12)(scaled))
    conv = LayerScale(0.5, 6)(keras.layers.Conv2D(6, 3, padding="same")(scaled))
    model = keras.Model(x, [scaled, dense, conv], name="layer_scale")
    assert_matches_keras(model, tmp_path)


def test_custom_scale_layer_with_and_without_the_activation_after_it(tmp_path):
    """InceptionResNetV2's CustomScaleLayer ([x, r] -> x + r * scale), followed by a ReLU (run in
    the sum's dispatch) and alone, as the blocks use it."""
    from keras.src.applications.inception_resnet_v2 import CustomScaleLayer
    x = keras.Input((6, 6, 8))
    branch = keras.layers.Conv2D(8, 1)(x)
    summed = CustomScaleLayer(0.17)([x, branch])
    relu = keras.layers.Activation("relu")(CustomScaleLayer(0.1)([summed, branch]))
    model = keras.Model(x, [summed, relu], name="custom_scale")
    assert_matches_keras(model, tmp_path)
