"""Keras's lookup and text layers, run on the CPU before the upload: StringLookup, IntegerLookup
and TextVectorization (strings do not live on a GPU).

They are host layers (`runs_on_host = True`): compiler/host_stage.py runs `host_call` on the
numpy arrays of the model's inputs, before the upload, and the rest of the graph takes their
outputs as its inputs. A host layer must therefore be called on a model input or on another host
layer's output (refused at load elsewhere). Each reproduces keras/src/layers/preprocessing/
index_lookup.py (and text_vectorization.py) exactly, on UTF-8 bytes as TensorFlow does (hashed
OOV indices with layers/preprocessing/farmhash.py's bit-exact FarmHash / SipHash):
`int` gives int32 indices; `one_hot`, `multi_hot`, `count` and `tf_idf` float32 encodings.

The vocabulary comes from the config, or from the `.keras` archive's asset file for an adapted
layer (the host stage hands it over: `set_asset_vocabulary`). Refused at load:
StringLookup(invert=True) (its output is strings); sparse outputs;
TextVectorization's ragged output, custom standardize / split callables and one_hot after a
split; multi_hot / count / tf_idf of a rank-1 input (Keras reduces them over the batch);
tf_idf without idf weights; encodings other than UTF-8.
"""
from __future__ import annotations

import numpy as np

from ...errors import InputValueError
from ..base import Layer, register
from .farmhash import fingerprint64, siphash
from ..typed_shapes import typed

# keras/src/layers/preprocessing/text_vectorization.py: the characters strip_punctuation removes.
PUNCTUATION = b'!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\''
MODES = {"binary": "multi_hot", "tf-idf": "tf_idf"}
DROPPED = np.iinfo(np.int64).max      # Keras's index for a mask token outside int mode


class HostLayer(Layer):
    """A layer computed with numpy on the CPU before the upload (compiler/host_stage.py)."""
    runs_on_host = True
    mask_behaviour = "drops"       # Keras's lookup layers make no mask
    needs_asset_vocabulary = False

    def host_output(self, arg) -> tuple[tuple, str]:
        """(shape, kerasgl dtype) of the output; `arg` mirrors the call's first argument with
        (shape, dtype) for each tensor: one pair, or a list of pairs (HashedCrossing)."""
        raise NotImplementedError

    def host_call(self, values: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def set_asset_vocabulary(self, lines: list[str]) -> None:
        raise NotImplementedError

    def compute_output_shape(self, *input_shapes):
        # The graph's shape inference passes by (its output is one of the GPU part's inputs):
        # the shape host_output gave at load (compiler/host_stage.py sets batch_shape, dtype).
        return typed(self.batch_shape, self.dtype)

    def call(self, inputs, **kwargs):
        raise self.unsupported("running on the GPU (it runs on the CPU before the upload)")


class IndexTable:
    """keras IndexLookup's rules: vocabulary, special tokens, OOV and mask, encodings."""

    def __init__(self, layer: HostLayer, strings: bool, config: dict, vocabulary):
        self.layer, self.strings = layer, strings
        option = config.get
        self.mode = MODES.get(option("output_mode", "int"), option("output_mode", "int"))
        if self.mode not in ("int", "one_hot", "multi_hot", "count", "tf_idf"):
            raise layer.unsupported(f"output_mode={self.mode!r}")
        if option("sparse"):
            raise layer.unsupported("sparse=True (a sparse output)")
        self.invert = bool(option("invert", False))
        self.num_oov = int(option("num_oov_indices", 1))
        self.mask_token = self._token(option("mask_token"))
        self.oov_token = self._token(option("oov_token"))
        self.max_tokens = option("max_tokens")
        self.pad = bool(option("pad_to_max_tokens", False))
        self.oov_method = option("oov_method", "floormod")
        self.hashed = strings or self.oov_method == "farmhash"
        salt = option("salt")
        self.salt = None if salt is None else \
            ((int(salt), int(salt)) if isinstance(salt, int) else tuple(int(v) for v in salt))
        self.oov_start = 1 if self.mask_token is not None and self.mode == "int" else 0
        self.token_start = self.oov_start + self.num_oov
        self.idf = None
        self.config = config
        if vocabulary is not None:
            self.set_vocabulary(list(vocabulary))
        else:
            self.tokens = None

    def _token(self, value):
        if value is None:
            return None
        return str(value).encode("utf-8") if self.strings else int(value)

    def set_vocabulary(self, vocabulary: list) -> None:
        vocabulary = [self._token(v) for v in vocabulary]
        special = [self.mask_token] * self.oov_start + [self.oov_token] * self.num_oov
        found_special = vocabulary[:self.token_start] == special
        tokens = vocabulary[self.token_start:] if found_special else vocabulary
        if not tokens or len(set(tokens)) != len(tokens):
            raise self.layer.unsupported("an empty vocabulary or one with repeated tokens")
        self.tokens = tokens
        self.size = self.token_start + len(tokens)
        self.depth = int(self.max_tokens) if self.pad and self.max_tokens else self.size
        self.table = {t: self.token_start + i for i, t in enumerate(tokens)}
        if self.mode == "tf_idf":
            self._idf_from_config(found_special)

    def _idf_from_config(self, found_special: bool) -> None:
        """Keras's padding of the config's idf_weights (used when the file holds none)."""
        weights = self.config.get("idf_weights")
        if weights is None:
            return
        weights = np.asarray(weights, np.float64)
        front = 0 if found_special else self.token_start
        value = 0.0 if found_special else float(np.average(weights))
        back = self.max_tokens - front - len(weights) if self.pad and self.max_tokens else 0
        self.idf = np.pad(weights, (front, back), "constant",
                          constant_values=(value, 0.0)).astype(np.float32)

    def finish(self, stored_weights: list) -> None:
        """At load: the vocabulary is known; tf_idf takes the file's idf weights if it has them."""
        if self.tokens is None:
            raise self.layer.unsupported("a layer without a vocabulary (neither in the config "
                                         "nor in the file's assets)")
        if self.mode == "tf_idf":
            if stored_weights:
                self.idf = np.asarray(stored_weights[0], np.float32).reshape(-1)
            if self.idf is None or self.idf.size != self.depth:
                raise self.layer.unsupported("output_mode='tf_idf' without idf weights of the "
                                             "vocabulary's size")
        if not self.strings and (self.invert or self.mask_token is not None):
            values = [t for t in self.tokens + [self.mask_token, self.oov_token] if t is not None]
            if any(not -2 ** 31 <= v < 2 ** 31 for v in values):
                raise self.layer.unsupported("tokens outside the int32 range")

    # -- shapes ------------------------------------------------------------------------------
    def output_shape(self, shape: tuple) -> tuple:
        if self.mode == "int":
            return shape
        if self.mode == "one_hot":
            if len(shape) > 1 and shape[-1] == 1:
                return shape[:-1] + (self.depth,)
            return shape + (self.depth,)
        if len(shape) != 2:
            raise self.layer.unsupported(f"output_mode={self.mode!r} of a rank-{len(shape)} "
                                         "input (Keras reduces a rank-1 input over the batch; "
                                         "kerasgl takes (batch, tokens))")
        return shape[:-1] + (self.depth,)

    @property
    def dtype(self) -> str:
        return "int32" if self.mode == "int" else "float32"

    # -- values ------------------------------------------------------------------------------
    def lookup(self, values: np.ndarray) -> np.ndarray:
        """int64 indices of the tokens (an object array of bytes, or integers)."""
        flat = values.reshape(-1)
        if self.invert:
            return self._invert(flat).reshape(values.shape)
        default = self.oov_start if self.num_oov == 1 else -1
        keys = flat.tolist()
        out = np.fromiter((self.table.get(k, default) for k in keys), np.int64, len(keys))
        if self.mask_token is not None:
            masked = np.fromiter((k == self.mask_token for k in keys), bool, len(keys))
            out[masked] = 0 if self.mode == "int" else DROPPED
        oov = out == -1
        if self.num_oov == 0 and oov.any():
            found = [k.decode("utf-8", "replace") if isinstance(k, bytes) else k
                     for k in np.asarray(keys, object)[oov][:5]]
            raise InputValueError(f"Layer '{self.layer.name}' ({self.layer.class_name}): when "
                                  f"num_oov_indices=0 all inputs should be in the vocabulary; "
                                  f"found OOV values {found}.")
        if self.num_oov > 1 and not self.hashed:
            out[oov] = np.mod(flat.astype(np.int64)[oov], self.num_oov) + self.oov_start
        elif self.num_oov > 1 and oov.any():      # tf.strings.to_hash_bucket_fast / _strong
            keys_oov = [k if isinstance(k, bytes) else str(int(k)).encode() for k, o in
                        zip(keys, oov) if o]
            out[oov] = [hash_bucket(k, self.num_oov, self.salt) + self.oov_start
                        for k in keys_oov]
        return out.reshape(values.shape)

    def _invert(self, flat: np.ndarray) -> np.ndarray:
        indices = flat.astype(np.int64)
        by_index = {self.token_start + i: t for i, t in enumerate(self.tokens)}
        out = np.array([by_index.get(int(i), self.oov_token) for i in indices], np.int64)
        if self.mask_token is not None:
            out[indices == 0] = self.mask_token
        return out

    def encode(self, indices) -> np.ndarray:
        return encode(self.mode, indices, self.depth, self.idf)


def hash_bucket(key: bytes, buckets: int, salt=None) -> int:
    """tf.strings.to_hash_bucket_fast (FarmHash Fingerprint64), or _strong with a salt
    (SipHash-2-4), of one string."""
    return (siphash(salt, key) if salt is not None else fingerprint64(key)) % buckets


def encode(mode: str, indices, depth: int, idf=None) -> np.ndarray:
    """keras numerical_utils.encode_categorical_inputs: int32 indices ("int"), or float32
    one_hot / multi_hot / count / tf_idf rows (a dense array, or a list of rows of tokens).
    Indices outside [0, depth) (Keras's dropped mask tokens) count for nothing."""
    if mode == "int":
        return np.asarray(indices, np.int64).astype(np.int32)
    if mode == "one_hot":
        idx = np.asarray(indices)
        if idx.ndim > 1 and idx.shape[-1] == 1:
            idx = idx[..., 0]
        return (idx[..., None] == np.arange(depth)).astype(np.float32)
    rows = [np.asarray(r, np.int64) for r in indices]
    out = np.zeros((len(rows), depth), np.float32)
    for i, row in enumerate(rows):
        row = row[(row >= 0) & (row < depth)]
        counts = np.bincount(row, minlength=depth)[:depth]
        out[i] = (counts > 0) if mode == "multi_hot" else counts
    if mode == "tf_idf":
        out = out * idf
    return out.astype(np.float32)


class LookupLayer(HostLayer):
    strings = True

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if self.option("encoding", "utf-8") not in ("utf-8", "utf8", "UTF-8"):
            raise self.unsupported(f"encoding={self.option('encoding')!r}")
        vocabulary = self.option("vocabulary")
        if isinstance(vocabulary, str):
            raise self.unsupported("a vocabulary file path (a file outside the model)")
        self.lookup_table = IndexTable(self, self.strings, self.config, vocabulary)
        if self.strings and self.lookup_table.invert:
            raise self.unsupported("invert=True (its output is strings, which kerasgl's "
                                   "outputs cannot hold)")
        self.needs_asset_vocabulary = vocabulary is None

    def set_asset_vocabulary(self, lines: list[str]) -> None:
        self.lookup_table.set_vocabulary(lines)

    def host_output(self, arg):
        (shape, dtype), table = arg, self.lookup_table
        table.finish(self.weights_np)
        want = "string" if self.strings and not table.invert else "int32"
        if dtype != want:
            raise self.unsupported(f"a {dtype} input (it takes "
                                   f"{'strings' if want == 'string' else 'integers'})")
        return table.output_shape(tuple(shape)), table.dtype

    def host_call(self, values):
        table = self.lookup_table
        indices = table.lookup(values)
        return table.encode(indices if table.mode in ("int", "one_hot") else list(indices))


@register("StringLookup")
class StringLookup(LookupLayer):
    strings = True


@register("IntegerLookup")
class IntegerLookup(LookupLayer):
    strings = False


@register("TextVectorization")
class TextVectorization(HostLayer):
    """standardize (lower / strip_punctuation / both / None), split (whitespace / character /
    None), ngrams, then a StringLookup with mask "" and one OOV index "[UNK]"."""

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        option = self.option
        self.standardize = option("standardize", "lower_and_strip_punctuation")
        if self.standardize not in (None, "lower", "strip_punctuation",
                                    "lower_and_strip_punctuation"):
            raise self.unsupported("a custom standardize callable (Python code; kerasgl runs no "
                                   "code from a model file)")
        self.split = option("split", "whitespace")
        if self.split not in (None, "whitespace", "character"):
            raise self.unsupported("a custom split callable (Python code; kerasgl runs no code "
                                   "from a model file)")
        if option("ragged"):
            raise self.unsupported("ragged=True (a ragged output: rows of different lengths, "
                                   "which a tensor cannot hold)")
        if option("encoding", "utf-8") not in ("utf-8", "utf8", "UTF-8"):
            raise self.unsupported(f"encoding={option('encoding')!r}")
        ngrams = option("ngrams")
        self.ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else \
            (tuple(int(n) for n in ngrams) if ngrams is not None else None)
        self.sequence_length = option("output_sequence_length")
        vocabulary = option("vocabulary")
        if isinstance(vocabulary, str):
            raise self.unsupported("a vocabulary file path (a file outside the model)")
        config = {"max_tokens": option("max_tokens"), "num_oov_indices": 1, "mask_token": "",
                  "oov_token": "[UNK]", "output_mode": option("output_mode", "int"),
                  "pad_to_max_tokens": option("pad_to_max_tokens", False),
                  "sparse": option("sparse", False), "idf_weights": option("idf_weights")}
        self.lookup_table = IndexTable(self, True, config, vocabulary)
        self.needs_asset_vocabulary = vocabulary is None
        if self.lookup_table.mode == "one_hot" and self.split is not None:
            raise self.unsupported("output_mode='one_hot' after a split (one one-hot row per "
                                   "token of ragged rows)")

    def set_asset_vocabulary(self, lines: list[str]) -> None:
        self.lookup_table.set_vocabulary(lines)

    def host_output(self, arg):
        (shape, dtype), table = arg, self.lookup_table
        table.finish(self.weights_np)
        if dtype != "string":
            raise self.unsupported(f"a {dtype} input (it takes strings)")
        shape = tuple(shape)
        if self.split is not None and not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)):
            raise self.unsupported(f"an input of shape {shape} (Keras splits strings of shape "
                                   "(batch,) or (batch, 1))")
        if table.mode == "int" and self.split is not None:
            return (shape[0], self.sequence_length), "int32"
        if table.mode == "int":        # the strings themselves are the tokens
            if self.sequence_length is not None and len(shape) != 2:
                raise self.unsupported(f"output_sequence_length without a split, for an input "
                                       f"of shape {shape} (kerasgl takes (batch, tokens))")
            length = self.sequence_length
            return (shape if length is None else shape[:-1] + (length,)), "int32"
        if self.split is None:
            return table.output_shape(shape), "float32"
        return (shape[0], table.depth), "float32"

    def _tokens(self, text: bytes) -> list:
        if self.standardize in ("lower", "lower_and_strip_punctuation"):
            text = text.lower()          # tf.strings.lower: ASCII letters only, as bytes.lower
        if self.standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            text = text.translate(None, PUNCTUATION)
        if self.split is None:
            return text
        if self.split == "whitespace":
            tokens = text.split()        # ASCII whitespace, as tf.strings.split
        else:
            try:
                tokens = [c.encode("utf-8") for c in text.decode("utf-8")]
            except UnicodeDecodeError as exc:
                raise InputValueError(f"Layer '{self.name}' (TextVectorization): split="
                                      f"'character' of a string that is not UTF-8 ({exc}).") \
                    from None
        if self.ngrams is None:
            return tokens
        grams = []
        for width in self.ngrams:
            grams += [b" ".join(tokens[i:i + width]) for i in range(len(tokens) - width + 1)]
        return grams

    def host_call(self, values):
        table = self.lookup_table
        if self.split is None:
            standardized = np.array([self._tokens(v) for v in values.reshape(-1).tolist()],
                                    object).reshape(values.shape)
            indices = table.lookup(standardized)
            if table.mode == "int":
                out = indices if self.sequence_length is None else _pad(
                    [list(r) for r in indices.reshape(len(values), -1)], self.sequence_length)
                return np.asarray(out).astype(np.int32)
            return table.encode(indices if table.mode == "one_hot" else list(indices))
        rows = [table.lookup(np.array(self._tokens(v), object))
                for v in values.reshape(-1).tolist()]
        if table.mode == "int":
            length = self.sequence_length
            if length is None:
                length = max((len(r) for r in rows), default=0)
            return _pad([list(r) for r in rows], length).astype(np.int32)
        return table.encode(rows)


def _pad(rows: list, length: int) -> np.ndarray:
    out = np.zeros((len(rows), length), np.int64)
    for i, row in enumerate(rows):
        row = row[:length]
        out[i, :len(row)] = row
    return out
