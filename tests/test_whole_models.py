"""Whole keras.applications models against Keras itself.

Built with weights=None (nothing is downloaded), with random BatchNormalization parameters and
statistics set before saving, so that normalisation (and its folding) is really exercised, at input
sizes that keep CI fast. Logits are compared (classifier_activation=None), not softmax outputs, so
an error cannot hide in probabilities near zero.
"""
import os

import numpy as np
import pytest

from keras_ref import assert_close, keras

import kerasgl as kg

MODELS = [
    # name, input size, formats
    ("MobileNetV2", 96, (".keras", ".h5")),
    ("ResNet50", 64, (".keras", ".h5")),
    ("DenseNet121", 64, (".keras",)),
    ("EfficientNetB0", 64, (".keras", ".h5")),
    ("InceptionV3", 75, (".keras",)),
]


def randomize_batchnorm(model, seed=0):
    """Moderate random gamma/beta/mean/variance in every BatchNormalization layer."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            for var in layer.weights:
                name = var.path.rsplit("/", 1)[-1]
                low, high = {"gamma": (0.5, 1.5), "beta": (-0.2, 0.2), "moving_mean": (-0.2, 0.2),
                             "moving_variance": (0.5, 1.5)}[name]
                var.assign(rng.uniform(low, high, size=var.shape).astype("float32"))


@pytest.mark.parametrize("name,size,formats", MODELS, ids=[m[0] for m in MODELS])
def test_application_matches_keras(name, size, formats, tmp_path):
    keras.utils.set_random_seed(0)
    model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3),
                                              classifier_activation=None)
    randomize_batchnorm(model)
    x = np.random.default_rng(1).uniform(0, 1, size=(2, size, size, 3)).astype("float32")
    if name == "EfficientNetB0":
        x *= 255.0  # EfficientNet rescales 0..255 inputs itself
    expected = model.predict(x, verbose=0)
    for fmt in formats:
        path = os.path.join(str(tmp_path), f"{name}{fmt}")
        model.save(path)
        before = kg.memory()
        with kg.load_model(path) as loaded:
            actual = loaded.predict(x, verbose=0)
        assert kg.memory().num_tensors == before.num_tensors
        assert_close(actual, expected, what=f"{name}{fmt}")
        os.remove(path)
