"""Keras's Hashing and HashedCrossing, run on the CPU before the upload (compiler/host_stage.py)
with layers/preprocessing/farmhash.py's bit-exact TensorFlow hashes:

- Hashing: each value (a string; an integer as its decimal string, as tf.as_string) goes to
  tf.strings.to_hash_bucket_fast (FarmHash Fingerprint64), or _strong (SipHash-2-4) with a salt,
  modulo num_bins; with mask_value, bin 0 is the mask's and the others shift up by one.
- HashedCrossing: tf.sparse.cross_hashed of one value per input and sample (its default hash key,
  FingerprintCat64 over each feature's hash: a string's Fingerprint64, an integer itself).

Outputs: "int" int32 bins; "one_hot" / "multi_hot" / "count" float32 encodings. Refused at load:
float inputs (Keras truncates them to int64 first: kerasgl's float32 inputs cannot hold every
value Keras's can), sparse outputs, multi_hot / count of a rank-1 input (Keras reduces them over
the batch), HashedCrossing inputs of other shapes than (batch,) or (batch, 1).
"""
from __future__ import annotations

import numpy as np

from ..base import register
from .farmhash import CROSS_KEY, M64, fingerprint64, fingerprint_cat64
from .lookup import HostLayer, encode, hash_bucket

MODES = ("int", "one_hot", "multi_hot", "count")


def _key(value) -> bytes:
    return value if isinstance(value, bytes) else str(int(value)).encode()


def _check_common(layer, modes) -> str:
    mode = layer.option("output_mode", "int")
    if mode not in modes:
        raise layer.unsupported(f"output_mode={mode!r}")
    if layer.option("sparse"):
        raise layer.unsupported("sparse=True (a sparse output)")
    bins = layer.option("num_bins")
    if not isinstance(bins, int) or not 0 < bins < 2 ** 31:
        raise layer.unsupported(f"num_bins={bins!r}")
    return mode


def _encoded_shape(layer, mode: str, shape: tuple, bins: int) -> tuple:
    if mode == "int":
        return shape
    if mode == "one_hot":
        return (shape[:-1] if len(shape) > 1 and shape[-1] == 1 else shape) + (bins,)
    if len(shape) != 2:
        raise layer.unsupported(f"output_mode={mode!r} of a rank-{len(shape)} input (Keras "
                                "reduces a rank-1 input over the batch; kerasgl takes "
                                "(batch, values))")
    return shape[:-1] + (bins,)


@register("Hashing")
class Hashing(HostLayer):
    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.mode = _check_common(self, MODES)
        self.bins = int(self.option("num_bins"))
        salt = self.option("salt")
        self.salt = None if salt is None else \
            ((int(salt), int(salt)) if isinstance(salt, int) else tuple(int(v) for v in salt))
        self.mask_value = self.option("mask_value")

    def host_output(self, arg):
        shape, dtype = arg
        if dtype not in ("string", "int32"):
            raise self.unsupported(f"a {dtype} input (kerasgl hashes strings and integers)")
        if self.mask_value is not None and isinstance(self.mask_value, str) != (
                dtype == "string"):
            raise self.unsupported(f"mask_value={self.mask_value!r} for a {dtype} input")
        return _encoded_shape(self, self.mode, tuple(shape), self.bins), \
            "int32" if self.mode == "int" else "float32"

    def host_call(self, values):
        bins, mask = self.bins, None
        keys = values.reshape(-1).tolist()
        if self.mask_value is not None and bins > 1:
            bins -= 1
            target = self.mask_value.encode("utf-8") if isinstance(self.mask_value, str) \
                else int(self.mask_value)
            mask = np.array([k == target for k in keys], bool)
        out = np.fromiter((hash_bucket(_key(k), bins, self.salt) for k in keys), np.int64,
                          len(keys))
        if mask is not None:
            out = np.where(mask, 0, out + 1)
        out = out.reshape(values.shape)
        return encode(self.mode, out if self.mode in ("int", "one_hot") else list(out),
                      self.bins)


@register("HashedCrossing")
class HashedCrossing(HostLayer):
    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.mode = _check_common(self, ("int", "one_hot"))
        self.bins = int(self.option("num_bins"))

    def host_output(self, arg):
        if not isinstance(arg, (list, tuple)) or len(arg) < 2 or not all(
                isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], str) for a in arg):
            raise self.unsupported("a call on other than a list of two or more tensors")
        shape = tuple(arg[0][0])
        if len(shape) > 2 or (len(shape) == 2 and shape[1] != 1) or len(shape) < 1:
            raise self.unsupported(f"inputs of shape {shape} (Keras crosses (batch,) or "
                                   "(batch, 1) inputs)")
        for other_shape, dtype in arg:
            if tuple(other_shape) != shape:
                raise self.unsupported("inputs of different shapes")
            if dtype not in ("string", "int32"):
                raise self.unsupported(f"a {dtype} input (Keras crosses strings and integers)")
        return _encoded_shape(self, self.mode, shape, self.bins), \
            "int32" if self.mode == "int" else "float32"

    def host_call(self, values):
        columns = [v.reshape(-1).tolist() for v in values]
        out = []
        for features in zip(*columns):
            hashed = CROSS_KEY
            for feature in features:
                fp = fingerprint64(feature) if isinstance(feature, bytes) else int(feature) & M64
                hashed = fingerprint_cat64(hashed, fp)
            out.append(hashed % self.bins)
        return encode(self.mode, np.array(out, np.int64).reshape(values[0].shape), self.bins)
