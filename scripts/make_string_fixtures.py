"""Write the fixtures of Keras 3's lookup and text layers in tests/data/strings/.

Keras 3's StringLookup, IntegerLookup, TextVectorization, Hashing and HashedCrossing need
TensorFlow even under the JAX backend, and the project venv has none. Run under a separate venv
with TensorFlow and Keras 3.15.1 (the TensorFlow backend), e.g.:

    python3 -m venv /work/venv-tf
    /work/venv-tf/bin/pip install tensorflow-cpu keras==3.15.1 h5py numpy
    /work/venv-tf/bin/python scripts/make_string_fixtures.py

Each model is saved as `<name>.keras` (and `<name>.h5` where Keras 3 writes and reloads it and
reloading gives the same outputs), next to `<name>.npz` holding:
  input_0, input_1, ...     the inputs fed to model.predict (strings as numpy unicode arrays)
  output_0                  what Keras computed for them (model.predict)
`manifest.json` lists every fixture: its formats, and for the models kerasgl refuses the words
the refusal must name (tests/test_string_layers.py reads only these files; no TensorFlow at test
time). `hash_reference.npz` holds TensorFlow's FarmHash / SipHash / cross_hashed values of strings
of every length path, which kerasgl/layers/preprocessing/farmhash.py must reproduce bit for bit.
`python scripts/make_string_fixtures.py NAME ...` rewrites only the named fixtures (and
`hash_reference`); inputs and weights are fixed (seeded), so a rerun writes the same values.
"""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "strings")

WORDS = np.array([["cat", "dog", "", "bird"], ["fish", "cat", "cat", "cow"],
                  ["", "", "dog", "emu"], ["Cat", "dög", "bird", "fish"]])
INTS = np.array([[10, 20, 0, 7], [30, 30, 11, 5], [0, 0, 40, 20], [-3, 12, 10, 99]], np.int64)
TEXT = np.array(["The cat sat on the mat.", "  Dogs, cats & BIRDS!  ", "", "ÉCOLE école a\tb\nc",
                 "mat mat mat", "x\xa0y  z\x1cw", "it's-a test... (really)", "the the the the the"])
VOCAB = ["cat", "dog", "bird", "fish"]
TEXT_VOCAB = ["the", "cat", "mat", "sat", "on", "dogs", "cats", "birds", "école", "a", "b",
              "the cat", "cat sat", "mat mat", "test", "t", "e"]


def tokens_input(width=4):
    return keras.Input(shape=(width,), dtype="string", name="tokens")


def text_input(shape=(1,)):
    return keras.Input(shape=shape, dtype="string", name="text")


def ints_input(width=4):
    return keras.Input(shape=(width,), dtype="int64", name="ids")


def single(layer, inp):
    return keras.Model(inp, layer(inp), name=layer.name + "_model")


def text_column(values=TEXT):
    return values.reshape(-1, 1)


def embedding_head(x, vocab_size, seed):
    keras.utils.set_random_seed(seed)
    x = layers.Embedding(vocab_size, 3, name="embedding")(x)
    x = layers.GlobalAveragePooling1D(name="pool")(x)
    return layers.Dense(2, name="head")(x)


# name -> (builder returning (model, inputs), refusal words or None)
def fixtures():
    out = {}

    def add(name, refused=None):
        def decorate(fn):
            out[name] = (fn, refused)
            return fn
        return decorate

    @add("string_lookup_int")
    def _():
        return single(layers.StringLookup(vocabulary=VOCAB, mask_token="", name="lookup"),
                      tokens_input()), [WORDS]

    @add("string_lookup_embedding")
    def _():
        inp = tokens_input()
        x = layers.StringLookup(vocabulary=VOCAB, name="lookup")(inp)
        return keras.Model(inp, embedding_head(x, 5, 1)), [WORDS]

    @add("string_lookup_one_hot")
    def _():
        return single(layers.StringLookup(vocabulary=VOCAB, output_mode="one_hot",
                                          name="lookup"), tokens_input(1)), [WORDS[:, :1]]

    @add("integer_lookup_one_hot_2d")
    def _():
        return single(layers.IntegerLookup(vocabulary=[10, 20, 30], output_mode="one_hot",
                                           mask_token=0, name="lookup"), ints_input()), [INTS]

    @add("string_lookup_multi_hot")
    def _():
        return single(layers.StringLookup(vocabulary=VOCAB, output_mode="multi_hot",
                                          mask_token="", name="lookup"), tokens_input()), [WORDS]

    @add("string_lookup_count_padded")
    def _():
        return single(layers.StringLookup(vocabulary=VOCAB, output_mode="count", max_tokens=9,
                                          pad_to_max_tokens=True, oov_token="?",
                                          name="lookup"), tokens_input()), [WORDS]

    @add("string_lookup_tf_idf")
    def _():
        return single(layers.StringLookup(vocabulary=VOCAB, output_mode="tf_idf",
                                          idf_weights=[0.5, 1.25, 2.0, 0.75], name="lookup"),
                      tokens_input()), [WORDS]

    @add("string_lookup_no_oov")
    def _():
        return single(layers.StringLookup(vocabulary=VOCAB + ["", "Cat", "dög", "cow", "emu"],
                                          num_oov_indices=0, name="lookup"),
                      tokens_input()), [WORDS]

    @add("integer_lookup_after_reshape", refused=["lookup", "reshape"])
    def _():
        inp = ints_input()
        x = layers.Reshape((2, 2), name="reshape")(inp)
        out = layers.IntegerLookup(vocabulary=[10, 20], name="lookup")(x)
        return keras.Model(inp, out), [INTS]

    @add("string_lookup_oov_hashed")
    def _():
        return single(layers.StringLookup(vocabulary=VOCAB, num_oov_indices=3, name="lookup"),
                      tokens_input()), [WORDS]

    @add("string_lookup_invert", refused=["lookup", "invert"])
    def _():
        return single(layers.StringLookup(vocabulary=VOCAB, invert=True, name="lookup"),
                      ints_input()), [np.array([[0, 1, 2, 3], [4, 5, 1, 1]], np.int64)]

    @add("string_lookup_adapted")
    def _():
        layer = layers.StringLookup(name="lookup", mask_token="")
        layer.adapt(np.array(["b", "a", "c", "a", "b", "a", "d"]))
        return single(layer, tokens_input()), [np.array([["a", "b", "c", "d"],
                                                         ["e", "", "a", "zz"]])]

    @add("integer_lookup_int")
    def _():
        return single(layers.IntegerLookup(vocabulary=[10, 20, 30, 40], mask_token=0,
                                           num_oov_indices=2, name="lookup"),
                      ints_input()), [INTS]

    @add("integer_lookup_multi_hot")
    def _():
        return single(layers.IntegerLookup(vocabulary=[10, 20, 30, 40], output_mode="multi_hot",
                                           name="lookup"), ints_input()), [INTS]

    @add("integer_lookup_invert")
    def _():
        return single(layers.IntegerLookup(vocabulary=[10, 20, 30, 40], invert=True,
                                           name="lookup"),
                      ints_input()), [np.array([[0, 1, 2, 3], [4, 5, 1, 1]], np.int64)]

    @add("text_vectorization_int")
    def _():
        inp = text_input()
        x = layers.TextVectorization(vocabulary=TEXT_VOCAB[:10], output_sequence_length=6,
                                     name="vectorize")(inp)
        return keras.Model(inp, embedding_head(x, 12, 2)), [text_column()]

    @add("text_vectorization_int_only")
    def _():
        return single(layers.TextVectorization(vocabulary=TEXT_VOCAB[:10],
                                               output_sequence_length=5, name="vectorize"),
                      text_input()), [text_column()]

    @add("text_vectorization_padded_ngrams")
    def _():
        return single(layers.TextVectorization(vocabulary=TEXT_VOCAB, ngrams=2,
                                               name="vectorize"),
                      text_input(())), [TEXT]

    @add("text_vectorization_multi_hot")
    def _():
        return single(layers.TextVectorization(vocabulary=TEXT_VOCAB, ngrams=(1, 2),
                                               output_mode="multi_hot", name="vectorize"),
                      text_input()), [text_column()]

    @add("text_vectorization_count_lower")
    def _():
        return single(layers.TextVectorization(vocabulary=TEXT_VOCAB[:12] + ["dogs,", "it's-a"],
                                               output_mode="count", standardize="lower",
                                               max_tokens=20, pad_to_max_tokens=True,
                                               name="vectorize"),
                      text_input()), [text_column()]

    @add("text_vectorization_tf_idf")
    def _():
        return single(layers.TextVectorization(vocabulary=TEXT_VOCAB[:6], output_mode="tf_idf",
                                               idf_weights=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
                                               name="vectorize"),
                      text_input()), [text_column()]

    @add("text_vectorization_characters")
    def _():
        return single(layers.TextVectorization(vocabulary=list("theacosmé"), split="character",
                                               standardize="strip_punctuation",
                                               output_sequence_length=12, name="vectorize"),
                      text_input()), [text_column()]

    @add("text_vectorization_no_split")
    def _():
        return single(layers.TextVectorization(vocabulary=["mat mat mat", "x", "ÉCOLE école a\tb\nc"],
                                               standardize=None, split=None, name="vectorize"),
                      text_input()), [text_column()]

    @add("text_vectorization_adapted")
    def _():
        layer = layers.TextVectorization(max_tokens=8, output_sequence_length=4,
                                         name="vectorize")
        layer.adapt(TEXT[:5])
        return single(layer, text_input()), [text_column()]

    @add("text_vectorization_callable", refused=["vectorize", "standardize"])
    def _():
        return single(layers.TextVectorization(vocabulary=TEXT_VOCAB, standardize=upper,
                                               name="vectorize"),
                      text_input()), [text_column()]

    @add("text_vectorization_ragged", refused=["vectorize", "ragged"])
    def _():
        return single(layers.TextVectorization(vocabulary=TEXT_VOCAB, ragged=True,
                                               name="vectorize"),
                      text_input()), None

    @add("hashing_strings")
    def _():
        return single(layers.Hashing(num_bins=7, name="hash"), tokens_input()), [WORDS]

    @add("hashing_strings_salted_masked")
    def _():
        return single(layers.Hashing(num_bins=5, salt=[7, 11], mask_value="", name="hash"),
                      tokens_input()), [WORDS]

    @add("hashing_ints_multi_hot")
    def _():
        return single(layers.Hashing(num_bins=6, output_mode="multi_hot", name="hash"),
                      ints_input()), [INTS]

    @add("string_lookup_oov_salted")
    def _():
        return single(layers.StringLookup(vocabulary=VOCAB, num_oov_indices=3, salt=[5, 2 ** 40],
                                          output_mode="count", name="lookup"),
                      tokens_input()), [WORDS]

    @add("integer_lookup_farmhash")
    def _():
        return single(layers.IntegerLookup(vocabulary=[10, 20, 30, 40], num_oov_indices=3,
                                           oov_method="farmhash", name="lookup"),
                      ints_input()), [INTS]

    @add("hashing_text")
    def _():
        return single(layers.Hashing(num_bins=1000, name="hash"), text_input()), [text_column()]

    @add("hashing_ints_masked")
    def _():
        return single(layers.Hashing(num_bins=9, mask_value=0, salt=3, name="hash"),
                      ints_input()), [INTS]

    @add("hashing_strings_count")
    def _():
        return single(layers.Hashing(num_bins=4, output_mode="count", name="hash"),
                      tokens_input()), [WORDS]

    @add("hashed_crossing_one_hot")
    def _():
        a = keras.Input(shape=(1,), dtype="string", name="a")
        b = keras.Input(shape=(1,), dtype="string", name="b")
        out = layers.HashedCrossing(num_bins=6, output_mode="one_hot", name="cross")((a, b))
        return keras.Model([a, b], out), [WORDS[:, :1], text_column(TEXT[:4])]

    @add("hashed_crossing")
    def _():
        a = keras.Input(shape=(), dtype="string", name="a")
        b = keras.Input(shape=(), dtype="int64", name="b")
        out = layers.HashedCrossing(num_bins=11, name="cross")((a, b))
        return keras.Model([a, b], out), [WORDS[:, 0], INTS[:, 1]]

    @add("sequential_adapted_text")
    def _():
        layer = layers.TextVectorization(max_tokens=10, output_sequence_length=5)
        layer.adapt(TEXT[:5])
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input(shape=(1,), dtype="string"), layer,
                                  layers.Embedding(10, 4), layers.GlobalAveragePooling1D(),
                                  layers.Dense(3)])
        return model, [text_column()]

    @add("text_and_numbers")
    def _():
        text = text_input(())
        numbers = keras.Input(shape=(2,), name="numbers")
        words = layers.TextVectorization(vocabulary=TEXT_VOCAB[:8], output_mode="count",
                                         name="vectorize")(text)
        ids = layers.StringLookup(vocabulary=["the", "cat"], output_mode="one_hot",
                                  name="first_word")(text)
        keras.utils.set_random_seed(4)
        x = layers.Concatenate()([words, ids, numbers])
        return keras.Model([text, numbers], layers.Dense(2, name="head")(x)), \
            [TEXT, np.linspace(-1, 1, 16, dtype=np.float32).reshape(8, 2)]

    @add("lookup_in_nested_model", refused=["lookup", "nested model 'inner'"])
    def _():
        inner_in = tokens_input()
        inner = keras.Model(inner_in, layers.StringLookup(vocabulary=VOCAB, name="lookup")(
            inner_in), name="inner")
        outer_in = tokens_input()
        return keras.Model(outer_in, layers.Embedding(5, 2)(inner(outer_in))), [WORDS]

    @add("hashing_after_dense", refused=["hash", "dense"])
    def _():
        inp = keras.Input(shape=(3,), name="x")
        x = layers.Dense(2, name="dense")(inp)
        return keras.Model(inp, layers.Hashing(num_bins=4, name="hash")(x)), \
            [np.ones((2, 3), np.float32)]

    return out


@keras.saving.register_keras_serializable(package="fixtures")
def upper(x):
    return tf.strings.upper(x)


def same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "OSU":
        return bool(np.all(a.astype(str) == b.astype(str)))
    return bool(np.allclose(a, b, atol=0, rtol=0))


def write(name, builder, refused, manifest):
    model, inputs = builder()
    base = os.path.join(OUT, name)
    entry = {"formats": ["keras"], "refused": refused}
    model.save(base + ".keras")
    arrays = {}
    if inputs is not None:
        # Keras's predict takes strings as TensorFlow string tensors (not numpy's unicode dtype).
        fed = [tf.constant(v.astype(object)) if v.dtype.kind in "OSU" else v for v in inputs]
        feed = fed[0] if len(fed) == 1 else fed
        result = model.predict(feed, verbose=0)
        for i, value in enumerate(inputs):
            arrays[f"input_{i}"] = value.astype(str) if value.dtype.kind in "OSU" else value
        result = np.asarray(result)
        arrays["output_0"] = result.astype(str) if result.dtype.kind in "OSU" else result
        reloaded = keras.saving.load_model(base + ".keras")
        if not same(reloaded.predict(feed, verbose=0), result):
            raise SystemExit(f"{name}: Keras's reloaded .keras gives other outputs")
        try:
            model.save(base + ".h5")
            again = keras.saving.load_model(base + ".h5")
            if same(again.predict(feed, verbose=0), result):
                entry["formats"].append("h5")
            else:
                entry["h5_differs"] = True
                os.remove(base + ".h5")
        except Exception as exc:      # noqa: BLE001 - recorded, not fatal
            entry["h5_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            if os.path.exists(base + ".h5"):
                os.remove(base + ".h5")
    np.savez_compressed(base + ".npz", **arrays)
    manifest[name] = entry
    print(name, entry, {k: (v.shape, v.dtype) for k, v in arrays.items()})


def hash_reference():
    """TensorFlow's string hashes of strings of every length path of FarmHash (0-16, 17-32,
    33-64, longer), modulo 2**63 - 1: tests/test_string_layers.py checks kerasgl's against them."""
    rng = np.random.default_rng(7)
    texts = ["", "a", "ab", "abc", "abcd", "é", "\x00\xff"] + [
        "".join(rng.choice(list("abcdefghijé €😀 \t,.XYZ0123456789"), n)) for n in range(5, 300, 3)]
    data = tf.constant([t.encode("utf-8") for t in texts])
    ints = tf.constant(rng.integers(-2 ** 40, 2 ** 40, len(texts)), tf.int64)
    big = 2 ** 63 - 1
    np.savez_compressed(os.path.join(OUT, "hash_reference.npz"),
                        strings=np.array(texts), ints=ints.numpy(),
                        fast=tf.strings.to_hash_bucket_fast(data, big).numpy(),
                        strong=tf.strings.to_hash_bucket_strong(data, big, [7, 2 ** 62 + 9]).numpy(),
                        cross=tf.sparse.to_dense(tf.sparse.cross_hashed(
                            [tf.reshape(data, (-1, 1)), tf.reshape(ints, (-1, 1))])).numpy())


def main(names):
    os.makedirs(OUT, exist_ok=True)
    if not names or "hash_reference" in names:
        hash_reference()
    path = os.path.join(OUT, "manifest.json")
    manifest = {}
    if names and os.path.exists(path):
        with open(path) as f:
            manifest = json.load(f)
    for name, (builder, refused) in fixtures().items():
        if not names or name in names:
            write(name, builder, refused, manifest)
    with open(path, "w") as f:
        json.dump(dict(sorted(manifest.items())), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
