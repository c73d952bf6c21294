"""Keras 2 (tf.keras) files end to end: kg.load_model + predict against tf-keras' own outputs.

The fixtures in tests/data/keras2 are written by scripts/make_keras2_fixtures.py under tf-keras
2.21 (no TensorFlow here): each `<name>.npz` holds the inputs tf-keras was fed (`input_i`) and
what tf-keras predicted (`output_i`). Most of them are files Keras 3 itself refuses to load (the
script's docstrings say which quirk each one covers).

Every fixture is in MUST_MATCH: kerasgl loads it and matches tf-keras within 1e-4 (abs + rel); a
file of tf-keras's that kerasgl refused would be a refusal where Keras answers.
"""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest

import kerasgl as kg
from kerasgl.saving.api import sniff_format
from keras_ref import assert_close

DATA = os.path.join(os.path.dirname(__file__), "data", "keras2")
ATOL = RTOL = 1e-4

MUST_MATCH = {
    "mlp_sequential", "legacy_sequential_list", "legacy_sequential_dict_cnn", "cnn_functional",
    "two_inputs_shared", "nested_sequential", "hard_sigmoid", "chunked_attrs", "json_model",
    "conv_groups_and_transpose", "hdf5_named_keras", "conv_pool_2d", "conv_pool_1d",
    "merge_and_activations", "batchnorm_variants", "embedding_input_length",
    # kerasgl/layers/rnn/recurrent.py (commit c21f979): time_major, hard_sigmoid recurrences,
    # reset_after=False, unroll, return_state
    "rnn_time_major", "lstm_keras2_defaults",
    # kerasgl/layers/rnn/wrappers.py (commit 14d04d8): inner configs with time_major / groups
    "rnn_wrappers", "bidirectional_wrappers", "time_distributed_wrappers",
    # kerasgl/compiler/masks.py (commit 5963d65): Embedding(mask_zero) / Masking into RNNs and pooling
    "masked_sequences",
    "core_and_preprocessing",
    # tf.keras's TFOpLambda layers (kerasgl/layers/tf_ops/) and UpSampling2D's bicubic / area
    # (tf.image.resize's taps, kerasgl/layers/reshaping/spatial.py)
    "tf_op_lambda", "upsampling_other_interpolations",
    # graph.py hands Keras 2's keyword tensor arguments (mha(q, v) saved as value=v) to layers
    "attention_layers",
}

def fixture_names() -> list[str]:
    return sorted(os.path.basename(p)[:-len(".npz")] for p in glob.glob(os.path.join(DATA, "*.npz")))


def model_files() -> list[tuple[str, str]]:
    """(fixture name, model file): every .h5 / .keras model, and the JSON + weights pair."""
    cases = []
    for name in fixture_names():
        for ext in (".h5", ".keras", ".json"):
            if os.path.exists(os.path.join(DATA, name + ext)):
                cases.append((name, name + ext))
    return cases


def load(filename: str):
    path = os.path.join(DATA, filename)
    if filename.endswith(".json"):
        return kg.load_model_from_json(path, path[:-len(".json")] + ".weights.h5")
    return kg.load_model(path)


def arrays(data, prefix: str) -> list[np.ndarray]:
    keys = sorted((k for k in data.files if k.startswith(prefix)), key=lambda k: int(k[len(prefix):]))
    return [data[k] for k in keys]


def predict_and_compare(name: str, filename: str) -> None:
    data = np.load(os.path.join(DATA, f"{name}.npz"))
    inputs, expected = arrays(data, "input_"), arrays(data, "output_")
    with load(filename) as model:
        actual = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    actual = actual if isinstance(actual, list) else [actual]
    assert len(actual) == len(expected), f"{filename}: {len(actual)} outputs, tf-keras has {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, ATOL, RTOL, what=f"{filename} output {i}")


def test_every_fixture_is_classified():
    names = set(fixture_names())
    assert names, "no fixtures in tests/data/keras2"
    assert names == MUST_MATCH, (f"unclassified: {sorted(names - MUST_MATCH)}, "
                                 f"missing: {sorted(MUST_MATCH - names)}")


@pytest.mark.parametrize("name,filename",
                         [c for c in model_files() if c[0] in MUST_MATCH])
def test_matches_tf_keras(name, filename):
    predict_and_compare(name, filename)


def test_hdf5_file_named_keras_is_read_as_hdf5():
    path = os.path.join(DATA, "hdf5_named_keras.keras")
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89HDF\r\n\x1a\n"
    assert sniff_format(path) == "hdf5"
