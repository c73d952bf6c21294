"""KerasHub's ViT (backbone and image classifier) against keras_hub itself on JAX: tiny random
models (non-square images and patches, both poolings, the optional pre-logits layer), saved as a
`.keras` file and as a preset; outputs within 1e-4 for a batch of two images."""
from __future__ import annotations

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from extras import KERAS_HUB_INSTALL, require

keras_hub = require("keras_hub", KERAS_HUB_INSTALL)

CLASSIFIERS = {
    "token": dict(num_classes=3),
    "gap": dict(num_classes=4, pooling="gap", intermediate_dim=6, activation="softmax"),
}


@pytest.fixture(scope="module", params=sorted(CLASSIFIERS))
def saved(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("vit_" + request.param)
    keras.utils.set_random_seed(3)
    backbone = keras_hub.models.ViTBackbone(image_shape=(8, 12, 3), patch_size=(4, 6),
                                            num_layers=2, num_heads=2, hidden_dim=8,
                                            mlp_dim=16, layer_norm_epsilon=1e-5)
    classifier = keras_hub.models.ViTImageClassifier(backbone=backbone, preprocessor=None,
                                                     **CLASSIFIERS[request.param])
    randomize_weights(classifier, seed=2)
    classifier.save(folder / "vit.keras")
    classifier.save_to_preset(str(folder / "preset"))
    return classifier, str(folder / "vit.keras"), str(folder / "preset")


def images():
    return np.random.default_rng(0).uniform(-1, 1, (2, 8, 12, 3)).astype("float32")


def test_classifier_matches_keras_hub(saved):
    classifier, keras_file, preset = saved
    x = images()
    expected = np.asarray(classifier(x))
    for path in (keras_file, preset):
        with kg.load_model(path) as model:
            assert model.hub_class == "ViTImageClassifier"
            assert_close(model.predict(x, verbose=0), expected, what=path)


def test_backbone_matches_keras_hub(saved):
    classifier, _, preset = saved
    x = images()
    with kg.kerashub.load(preset, task=False) as model:
        assert model.hub_class == "ViTBackbone"
        assert_close(model.predict(x, verbose=0), np.asarray(classifier.backbone(x)),
                     what="backbone")


def test_unsupported_option_is_refused(tmp_path):
    backbone = keras_hub.models.ViTBackbone(image_shape=(8, 8, 3), patch_size=4, num_layers=1,
                                            num_heads=1, hidden_dim=4, mlp_dim=8,
                                            use_class_token=False)
    backbone.save_to_preset(str(tmp_path / "no_token"))
    with pytest.raises(kg.errors.UnsupportedLayerError, match="use_class_token"):
        kg.load_model(str(tmp_path / "no_token"))
