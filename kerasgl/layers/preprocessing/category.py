"""Keras's numeric category layers at inference: CategoryEncoding (integer tokens to one-hot,
multi-hot or count vectors, counts optionally weighted by count_weights) and Discretization
(numbers to the index of their bin among bin_boundaries, or that index encoded as
CategoryEncoding encodes a token).

Tokens outside [0, num_tokens), negative ones included, encode as nothing (a row of zeros, no
count), which is what Keras computes on JAX (jax.nn.one_hot). Outputs are float32 (kerasgl's
float dtype; Keras's float16 / float64 policies give the same 0/1 values), and Discretization's
indices int32, as in Keras. What kerasgl would not compute as Keras does is refused at load:
sparse outputs, integer dtype policies, a multi-hot / count encoding of a rank-1 input (Keras
reduces it over the batch axis), CategoryEncoding on inputs of rank 3 or more (Keras's declared
output shape and its result disagree there) or on float inputs, count_weights of another shape
than the tokens', an unadapted Discretization and bin_boundaries out of increasing order."""
from __future__ import annotations

import numpy as np

from ...ops import category_ops, layout
from ...ops.arg_ops import one_hot
from ...tensors import ownership
from .. import config_values
from ..base import Layer, register
from ..typed_shapes import dtype_of, typed

ENCODINGS = ("one_hot", "multi_hot", "count")
# Float dtype policies whose results kerasgl's float32 values equal: 0 and 1 are exact in each;
# counts can round in the half-precision dtypes, so "count" takes only the first two.
EXACT_DTYPES = ("float32", "float64")
HALF_DTYPES = ("float16", "bfloat16", "mixed_float16", "mixed_bfloat16")


def check_output_dtype(layer: Layer, mode: str) -> None:
    """Refuse a dtype policy under which Keras's encoding would not equal kerasgl's float32 one."""
    dtype = layer.option("dtype") or "float32"
    if dtype in EXACT_DTYPES or (dtype in HALF_DTYPES and mode != "count"):
        return
    raise layer.unsupported(f"dtype={dtype!r} with output_mode={mode!r} (kerasgl encodes in "
                            "float32)")


def encoded_shape(layer: Layer, shape: tuple, mode: str, depth: int) -> tuple:
    """Keras's output shape for `mode` encoding tokens of `shape` into `depth` classes (refusing
    what kerasgl does not compute as Keras does)."""
    if mode == "one_hot":     # a trailing axis of 1 is replaced, any other kept
        return (shape[:-1] if len(shape) > 1 and shape[-1] == 1 else shape) + (depth,)
    if len(shape) < 2:
        raise layer.unsupported(f"output_mode={mode!r} on a rank-1 input (Keras reduces it over "
                                "the batch axis)")
    if mode == "multi_hot" and shape[1] == 0:
        raise layer.unsupported("output_mode='multi_hot' on an empty axis 1 (Keras's maximum over "
                                "no values fails)")
    return (shape[0],) + shape[2:] + (depth,)


def encode(indices, mode: str, depth: int):
    """int32 tokens encoded as Keras's `mode` encoding into `depth` classes (float32)."""
    if mode != "one_hot":
        return category_ops.bincount(indices, depth, binary=mode == "multi_hot")
    if indices.ndim < 2 or indices.shape[-1] != 1:
        return one_hot(indices, depth)
    return ownership.tidy.run(lambda: layout.reshape(one_hot(indices, depth),
                                                     tuple(indices.shape[:-1]) + (depth,)))


def refuse_sparse(layer: Layer) -> None:
    if config_values.flag(layer, "sparse", False):
        raise layer.unsupported("sparse=True (a sparse output)")


@register("CategoryEncoding")
class CategoryEncoding(Layer):
    """num_tokens classes; output_mode "one_hot" (a new last axis, or the trailing axis of 1
    replaced), "multi_hot" / "count" (of the tokens of each sample: axis 1 of a rank-2 input)."""
    shaders = ("one_hot.comp", "category_encoding.comp")
    mask_behaviour = "drops"     # Keras's: the class does not support masking
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.num_tokens = config_values.positive_int(self, "num_tokens")
        mode = config_values.choice(self, "output_mode", ENCODINGS + ("binary",), "multi_hot")
        self.mode = "multi_hot" if mode == "binary" else mode      # Keras's older name
        refuse_sparse(self)
        check_output_dtype(self, self.mode)

    def compute_output_shape(self, input_shape, count_weights=None):
        if dtype_of(input_shape) != "int32":
            raise self.unsupported(f"a {dtype_of(input_shape)} input (kerasgl encodes integer "
                                   "tokens: give the Input an integer dtype)")
        shape = tuple(input_shape)
        if len(shape) not in (1, 2):
            raise self.unsupported(f"an input of rank {len(shape)} (Keras encodes inputs of rank "
                                   "1 or 2, batch axis included)")
        if count_weights is not None:
            self.check_count_weights(shape, count_weights)
        return encoded_shape(self, shape, self.mode, self.num_tokens)

    def check_count_weights(self, shape, weights) -> None:
        if self.mode != "count":     # Keras refuses them when it runs the call
            raise self.unsupported(f"count_weights with output_mode={self.mode!r} (Keras uses "
                                   "them in 'count' mode only)")
        if dtype_of(weights) != "float32":
            raise self.unsupported(f"{dtype_of(weights)} count_weights")
        if len(weights) != len(shape) or any(a is not None and b is not None and a != b
                                             for a, b in zip(shape, weights)):
            raise self.unsupported(f"count_weights of shape {tuple(weights)} for tokens of "
                                   f"shape {shape} (only weights of the tokens' shape)")

    def call(self, inputs, count_weights=None, **kwargs):
        if count_weights is not None and tuple(count_weights.shape) != tuple(inputs.shape):
            raise self.shape_error(f"count_weights of shape {list(count_weights.shape)} for "
                                   f"tokens of shape {list(inputs.shape)}.")
        if count_weights is not None:
            return category_ops.bincount(inputs, self.num_tokens, weights=count_weights)
        return encode(inputs, self.mode, self.num_tokens)


@register("Discretization")
class Discretization(Layer):
    """The index of each value's bin: how many bin_boundaries are <= it (jnp.digitize), int32
    with output_mode "int"; "one_hot", "multi_hot" and "count" encode that index as
    CategoryEncoding does, into len(bin_boundaries) + 1 classes (float32)."""
    shaders = ("discretization.comp", "one_hot.comp", "category_encoding.comp")
    mask_behaviour = "drops"     # Keras's: the class does not support masking
    # No arrays: adapt() leaves its result in bin_boundaries (older files may hold the summary
    # adapt worked from, which inference does not read).
    weight_arrays = None

    @classmethod
    def inference_weights(cls, config, weights):
        return []

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        bounds = config_values.raw(self, "bin_boundaries", None)
        if bounds is None:
            raise self.unsupported("a Discretization without bin_boundaries (neither given nor "
                                   "adapted)")
        if not isinstance(bounds, list) or not all(map(config_values.is_number, bounds)):
            raise config_values.error(self, "bin_boundaries", bounds, "a list of numbers")
        # As Keras reads them: converted to float32 (floatx) before jnp.digitize.
        self.bounds = np.asarray(bounds, np.float64).astype(np.float32)
        if np.isnan(self.bounds).any() or np.any(np.diff(self.bounds) < 0):
            raise self.unsupported("bin_boundaries out of increasing order")
        self.mode = config_values.choice(self, "output_mode", ("int",) + ENCODINGS, "int")
        refuse_sparse(self)
        if self.mode != "int":
            check_output_dtype(self, self.mode)
        self.depth = self.bounds.size + 1

    def compute_output_shape(self, input_shape):
        if dtype_of(input_shape) not in ("float32", "int32"):
            raise self.unsupported(f"a {dtype_of(input_shape)} input")
        shape = tuple(input_shape)
        if self.mode == "int":
            return typed(shape, "int32")
        return encoded_shape(self, shape, self.mode, self.depth)

    def build(self, input_shape):
        # A GL buffer cannot be empty: no boundaries upload one value the shader never reads.
        stored = self.bounds if self.bounds.size else np.zeros(1, np.float32)
        self.bounds_t = self.upload(stored, name="bin_boundaries")
        self.built = True

    def call(self, inputs, **kwargs):
        if self.mode == "int":
            return category_ops.digitize(inputs, self.bounds_t, self.bounds.size)
        return ownership.tidy.run(lambda: encode(
            category_ops.digitize(inputs, self.bounds_t, self.bounds.size), self.mode, self.depth))
