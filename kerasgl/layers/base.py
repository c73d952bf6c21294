"""The anatomy every kerasgl layer shares, and the registry from Keras class_name to layer class.

A layer is built once, at load time, from its normalised config and its numpy weights; from then on
`call` turns input tensors into output tensors with ops. The contract:

- `__init__(spec, keras_major)`: read the config; raise UnsupportedLayerError for options kerasgl
  cannot honour (never silently ignore one).
- `compute_output_shape(input_shape)`: Keras's rule; shapes are tuples with None for the batch (and
  other unknown) dimensions; the structure follows the call's first argument (a tuple, or a list
  of tuples for layers called on a list). Raise ShapeError naming the layer on bad input.
- `build(input_shape)`: called once, after the shapes are known; prepare and upload the weights
  here with `self.upload(array)` (transposes, folding and packing happen once, here, never in call).
- `call(inputs, **kwargs)`: same signature as the Keras layer's call. Returns a Tensor or a list of
  Tensors. It must not dispose its inputs, and must dispose every temporary it makes.
- `shaders`: the shader files the layer runs, for summary().
"""
from __future__ import annotations

import numpy as np

from ..tensors import ownership
from ..errors import ShapeError, UnsupportedLayerError
from ..saving.spec import LayerSpec
from ..tensors.tensor import Tensor, tensor

LAYER_CLASSES: dict[str, type] = {}


def register_in(registry: dict, class_names: tuple):
    """Class decorator entering the class in `registry` under these Keras class names."""
    def decorate(cls):
        for name in class_names:
            registry[name] = cls
        cls.keras_class_names = class_names
        return cls
    return decorate


def register(*class_names: str):
    """Class decorator: this kerasgl layer implements these Keras class names."""
    return register_in(LAYER_CLASSES, class_names)


class Layer:
    keras_class_names: tuple = ()
    shaders: tuple = ()

    def __init__(self, spec: LayerSpec, keras_major: int = 3):
        self.spec = spec
        self.name = spec.name
        self.class_name = spec.class_name
        self.config = spec.config
        self.keras_major = keras_major
        self.weights_np: list[np.ndarray] = list(spec.weights)
        self._gpu_weights: list[Tensor] = []
        self.built = False

    # -- helpers for subclasses ------------------------------------------------------------
    def option(self, key, default=None):
        return self.config.get(key, default)

    def unsupported(self, what: str) -> UnsupportedLayerError:
        return UnsupportedLayerError(f"Layer '{self.name}' ({self.class_name}): {what} is not supported.")

    def shape_error(self, message: str) -> ShapeError:
        return ShapeError(f"Layer '{self.name}' ({self.class_name}): {message}")

    def expect_weights(self, count: int) -> None:
        if len(self.weights_np) != count:
            from ..errors import ModelFileError
            raise ModelFileError(
                f"Layer '{self.name}' ({self.class_name}) expects {count} weight arrays, the file "
                f"has {len(self.weights_np)}.")

    def upload(self, array, dtype="float32") -> Tensor:
        """Put a prepared weight on the GPU; owned by this layer (exempt from tidy scopes)."""
        weight = ownership.keep(tensor(np.ascontiguousarray(array), dtype=dtype))
        self._gpu_weights.append(weight)
        return weight

    # -- the contract --------------------------------------------------------------------------
    def compute_output_shape(self, input_shape):
        return input_shape

    def build(self, input_shape) -> None:
        self.built = True

    def call(self, inputs, **kwargs):
        raise NotImplementedError

    @property
    def param_count(self) -> int:
        return int(sum(np.prod(w.shape) for w in self.weights_np))

    def dispose(self) -> None:
        for weight in self._gpu_weights:
            weight.dispose()
        self._gpu_weights.clear()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self.name}' ({self.class_name})>"


class AffineFoldable:
    """Mixin for layers that can take over `y * scale + shift` per output unit applied right after
    them (an inference BatchNormalization), folded into their weights at build. Subclasses give
    `fold_width` (their output units) and `_linear_and_unbuilt()` (no activation of their own yet,
    weights not yet packed: only then is the fold exact up to rounding)."""
    _fold = None      # (scale, shift) of the folded affine map, composed over successive folds
    fold_width = 0

    def _linear_and_unbuilt(self) -> bool:
        raise NotImplementedError

    def fold_channel_affine(self, scale, shift) -> bool:
        scale = np.asarray(scale, np.float32).reshape(-1)
        shift = np.asarray(shift, np.float32).reshape(-1)
        if not self._linear_and_unbuilt() or scale.size != self.fold_width \
                or shift.size != self.fold_width:
            return False
        if self._fold is None:
            self._fold = (scale, shift)
        else:   # (y * s1 + t1) * s2 + t2
            s1, t1 = self._fold
            self._fold = (s1 * scale, t1 * scale + shift)
        return True
