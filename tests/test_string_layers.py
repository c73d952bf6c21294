"""Keras's lookup and text layers (StringLookup, IntegerLookup, TextVectorization) run on the
CPU before the upload (kerasgl/compiler/host_stage.py, kerasgl/layers/preprocessing/lookup.py), against
the outputs Keras 3.15.1 (TensorFlow backend) computed, committed in tests/data/strings/ by
scripts/make_string_fixtures.py (these layers need TensorFlow, which the test venv lacks); and
Hashing, HashedCrossing and hashed OOV indices (kerasgl/layers/preprocessing/farmhash.py) with TensorFlow's
own hashes. Refusals: the fixtures Keras wrote, and fixtures with an option edited in."""
from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

import kerasgl as kg
from kerasgl.layers.preprocessing import farmhash

DATA = os.path.join(os.path.dirname(__file__), "data", "strings")
with open(os.path.join(DATA, "manifest.json")) as f:
    MANIFEST = json.load(f)

RUN = [(name, fmt) for name, entry in MANIFEST.items() if not entry["refused"]
       for fmt in entry["formats"]]
REFUSED = [(name, fmt) for name, entry in MANIFEST.items() if entry["refused"]
           for fmt in entry["formats"]]


def fixture(name):
    arrays = np.load(os.path.join(DATA, name + ".npz"))
    inputs = [arrays[k] for k in sorted(k for k in arrays.files if k.startswith("input_"))]
    return inputs, arrays["output_0"]


def path_of(name, fmt):
    return os.path.join(DATA, f"{name}.{fmt}")


@pytest.mark.parametrize("name,fmt", RUN)
def test_matches_keras(name, fmt):
    inputs, expected = fixture(name)
    with kg.load_model(path_of(name, fmt)) as model:
        got = model.predict(inputs[0] if len(inputs) == 1 else inputs, verbose=0)
        for spec, x in zip(model.inputs, inputs):
            assert spec.dtype == {"U": "string", "i": "int32", "f": "float32"}[x.dtype.kind]
    assert got.shape == expected.shape
    if expected.dtype.kind in "iu":
        assert got.dtype.kind in "iuf"
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize("name,fmt", REFUSED)
def test_refused_at_load(name, fmt):
    with pytest.raises(kg.UnsupportedLayerError) as info:
        kg.load_model(path_of(name, fmt))
    message = str(info.value)
    assert f"{name}.{fmt}" in message
    for word in MANIFEST[name]["refused"]:
        assert word in message


def test_string_inputs_of_every_kind():
    inputs, expected = fixture("string_lookup_int")
    with kg.load_model(path_of("string_lookup_int", "keras")) as model:
        as_bytes = np.char.encode(inputs[0], "utf-8")
        for x in (inputs[0], as_bytes, inputs[0].tolist(), inputs[0].astype(object)):
            np.testing.assert_array_equal(model.predict(x, verbose=0), expected)
        with pytest.raises(kg.InputTypeError, match="expected strings"):
            model.predict(np.zeros((2, 4), np.float32), verbose=0)
        with pytest.raises(kg.ShapeError, match="expected shape"):
            model.predict(inputs[0][:, :3], verbose=0)


def test_host_layers_in_summary_and_as_requested_outputs():
    inputs, expected = fixture("text_and_numbers")
    with kg.load_model(path_of("text_and_numbers", "keras")) as model:
        lines = []
        model.summary(print_fn=lines.append)
        assert "vectorize (TextVectorization)  (None, 9)" in lines[0]
        words, first, out = model.predict(inputs, outputs=["vectorize", "first_word",
                                                           "head"], verbose=0)
        assert words.shape == (8, 9) and first.shape == (8, 3)
        assert first.sum(axis=1).tolist() == [1.0] * 8
        np.testing.assert_allclose(out, expected, atol=1e-4)
        assert [s.dtype for s in model.inputs] == ["string", "float32"]


def test_batches_run_through_the_host_stage_one_by_one():
    inputs, expected = fixture("text_vectorization_int")
    with kg.load_model(path_of("text_vectorization_int", "keras")) as model:
        for batch_size in (3, 8):
            np.testing.assert_allclose(model.predict(inputs[0], batch_size=batch_size,
                                                     verbose=0), expected, atol=1e-4)
        model.summary(print_fn=lambda text: None)


def test_batches_padded_to_different_lengths_are_a_shape_error():
    inputs, expected = fixture("text_vectorization_padded_ngrams")
    with kg.load_model(path_of("text_vectorization_padded_ngrams", "keras")) as model:
        with pytest.raises(kg.ShapeError, match="output_sequence_length"):
            model.predict(inputs[0], batch_size=2, verbose=0)
        np.testing.assert_array_equal(model.predict(inputs[0], batch_size=8, verbose=0),
                                      expected)


def test_out_of_vocabulary_without_oov_indices_is_an_input_error():
    with kg.load_model(path_of("string_lookup_no_oov", "keras")) as model:
        with pytest.raises(kg.InputValueError, match="num_oov_indices=0"):
            model.predict(np.array([["cat", "dog", "owl", "cat"]]), verbose=0)


def test_tensor_inputs_are_refused():
    inputs, _ = fixture("integer_lookup_int")
    with kg.load_model(path_of("integer_lookup_int", "keras")) as model:
        with kg.tidy():
            x = kg.tensor(inputs[0].astype(np.int32), dtype="int32")
            with pytest.raises(kg.InputTypeError, match="numpy arrays"):
                model.predict(x, verbose=0)
        with pytest.raises(kg.InputTypeError, match=r"model\(x\) takes GPU tensors"):
            model(inputs[0])


def test_hashes_are_tensorflows_bit_for_bit():
    """FarmHash Fingerprint64 (every length path), SipHash-2-4 and cross_hashed's chaining,
    against TensorFlow's to_hash_bucket_fast / _strong / sparse.cross_hashed modulo 2**63 - 1."""
    ref = np.load(os.path.join(DATA, "hash_reference.npz"))
    big = 2 ** 63 - 1
    texts = [t.encode("utf-8") for t in ref["strings"]]
    assert max(len(t) for t in texts) > 200 and min(len(t) for t in texts) == 0
    assert [farmhash.fingerprint64(t) % big for t in texts] == ref["fast"].tolist()
    assert [farmhash.siphash((7, 2 ** 62 + 9), t) % big for t in texts] == ref["strong"].tolist()
    crossed = [farmhash.fingerprint_cat64(farmhash.fingerprint_cat64(
        farmhash.CROSS_KEY, farmhash.fingerprint64(t)), int(i) & farmhash.M64) % big
        for t, i in zip(texts, ref["ints"])]
    assert crossed == ref["cross"][:, 0].tolist()


def test_warm_up_feeds_empty_strings():
    """warm_up runs the host stage on empty strings (the zeros of a string input): it makes the
    GPU part's plan for that batch, leaves no tensor behind, and the model still gives Keras's
    answers on real text afterwards."""
    inputs, expected = fixture("text_vectorization_int")
    with kg.load_model(path_of("text_vectorization_int", "keras")) as model:
        before = kg.memory().num_tensors
        info = model.warm_up(batch_size=2, max_calls=2)
        assert info is not None and [tuple(s)[0] for s in info.input_shapes] == [2]
        assert [tuple(i.input_shapes[0])[0] for i in model.plan_info()] == [2]
        assert kg.memory().num_tensors == before
        got = model.predict(inputs[0], verbose=0)
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)


# -- refusals of options and placements, made by editing a fixture's config -----------------------
def edited(tmp_path, name, edit, drop=()):
    """A copy of fixture `name`.keras whose config.json text went through `edit` (and without the
    members in `drop`)."""
    target = tmp_path / f"edited_{name}.keras"
    with zipfile.ZipFile(path_of(name, "keras")) as src, zipfile.ZipFile(target, "w") as dst:
        for member in src.namelist():
            if member in drop:
                continue
            data = src.read(member)
            if member == "config.json":
                data = edit(data.decode("utf-8")).encode("utf-8")
            dst.writestr(member, data)
    return str(target)


def set_option(layer_name, key, value):
    def edit(text):
        config = json.loads(text)
        for layer in config["config"]["layers"]:
            if layer["config"].get("name") == layer_name:
                layer["config"][key] = value
        return json.dumps(config)
    return edit


@pytest.mark.parametrize("name,layer,key,value,words", [
    ("text_vectorization_int_only", "vectorize", "output_mode", "one_hot", ["one_hot", "split"]),
    ("text_vectorization_int_only", "vectorize", "split",
     {"module": "builtins", "class_name": "function", "config": "f", "registered_name": "f"},
     ["split callable"]),
    ("string_lookup_int", "lookup", "encoding", "latin-1", ["encoding"]),
    ("string_lookup_multi_hot", "lookup", "sparse", True, ["sparse"]),
    ("hashing_strings", "hash", "sparse", True, ["sparse"]),
    ("string_lookup_multi_hot", "tokens", "batch_shape", [None], ["rank-1"]),
    ("hashing_ints_multi_hot", "ids", "dtype", "float32", ["float32 input"]),
    ("integer_lookup_int", "ids", "dtype", "string", ["string input", "integers"]),
    ("string_lookup_int", "lookup", "vocabulary", "/etc/vocab.txt", ["vocabulary file"]),
])
def test_options_refused_at_load(tmp_path, name, layer, key, value, words):
    path = edited(tmp_path, name, set_option(layer, key, value))
    with pytest.raises(kg.UnsupportedLayerError) as info:
        kg.load_model(path)
    assert f"'{layer}'" in str(info.value) or layer in ("tokens", "ids")
    for word in words:
        assert word in str(info.value)


def test_strings_reaching_a_gpu_layer_are_refused(tmp_path):
    path = edited(tmp_path, "string_lookup_embedding",
                  lambda text: text.replace('"keras_history": ["lookup", 0, 0]',
                                            '"keras_history": ["tokens", 0, 0]'))
    with pytest.raises(kg.UnsupportedLayerError, match="'embedding'.*strings of 'tokens'"):
        kg.load_model(path)


def test_adapted_layer_without_its_vocabulary_asset_is_refused(tmp_path):
    asset = "assets/layers/text_vectorization/vocabulary.txt"
    path = edited(tmp_path, "text_vectorization_adapted", lambda text: text, drop=(asset,))
    with pytest.raises(kg.UnsupportedLayerError, match="'vectorize'.*without a vocabulary"):
        kg.load_model(path)


def test_character_split_of_bytes_that_are_not_utf8_is_an_input_error():
    with kg.load_model(path_of("text_vectorization_characters", "keras")) as model:
        with pytest.raises(kg.InputValueError, match="not UTF-8"):
            model.predict(np.array([[b"ok \xff\xfe"]], dtype=object), verbose=0)
