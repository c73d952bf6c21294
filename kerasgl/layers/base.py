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

from .. import ownership
from ..errors import ShapeError, UnsupportedLayerError
from ..saving.spec import LayerSpec
from ..tensor import Tensor, tensor

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
