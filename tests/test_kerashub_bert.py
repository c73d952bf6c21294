"""KerasHub's BERT (backbone and text classifier) against keras_hub itself on JAX: tiny random
models built offline, saved as `.keras` files and presets, loaded by kg.load_model; sequence and
pooled outputs, and the classifier's logits, within 1e-4 for two padded inputs."""
from __future__ import annotations

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from extras import KERAS_HUB_INSTALL, require

keras_hub = require("keras_hub", KERAS_HUB_INSTALL)


def inputs():
    return {"token_ids": np.array([[5, 6, 7, 0, 0, 0], [1, 2, 3, 4, 48, 0]], np.int32),
            "segment_ids": np.array([[0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 1, 0]], np.int32),
            "padding_mask": np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0]], bool)}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert")
    keras.utils.set_random_seed(5)
    backbone = keras_hub.models.BertBackbone(vocabulary_size=50, num_layers=2, num_heads=2,
                                             hidden_dim=16, intermediate_dim=32,
                                             max_sequence_length=16)
    classifier = keras_hub.models.BertTextClassifier(backbone=backbone, num_classes=3,
                                                     preprocessor=None, activation="softmax")
    randomize_weights(classifier, seed=2, low=-0.5, high=0.5)
    paths = {"backbone.keras": folder / "backbone.keras",
             "classifier.keras": folder / "classifier.keras", "preset": folder / "preset"}
    backbone.save(paths["backbone.keras"])
    classifier.save(paths["classifier.keras"])
    classifier.save_to_preset(str(paths["preset"]))
    return classifier, {k: str(v) for k, v in paths.items()}


def test_backbone_sequence_and_pooled_outputs_match(saved):
    classifier, paths = saved
    expected = {k: np.asarray(v) for k, v in classifier.backbone(inputs()).items()}
    for path, task in ((paths["backbone.keras"], True), (paths["preset"], False)):
        with kg.kerashub.load(path, task=task) as model:
            got = model.predict(inputs(), verbose=0)
            assert sorted(got) == ["pooled_output", "sequence_output"]
            for key in got:
                assert_close(got[key], expected[key], what=f"{path} {key}")
            for layer in classifier.backbone.layers:
                for mine, theirs in zip(model.get_layer(layer.name).get_weights(),
                                        layer.get_weights()):
                    np.testing.assert_array_equal(mine, theirs, err_msg=layer.name)


def test_text_classifier_matches(saved):
    classifier, paths = saved
    expected = np.asarray(classifier(inputs()))
    for form in ("classifier.keras", "preset"):
        with kg.load_model(paths[form]) as model:
            assert model.hub_class == "BertTextClassifier"
            assert_close(model.predict(inputs(), verbose=0), expected, what=form)
            assert model.count_params() == classifier.count_params()
