"""Layers written by kerasgl's users for the custom layer classes of their Keras models.

Keras loads a model holding a class of its user's with `keras.models.load_model(path,
custom_objects={"TransformerBlock": TransformerBlock})`; kerasgl takes the same argument, with a
kerasgl layer in place of the Keras one: a subclass of `CustomLayer` whose `call` composes
kerasgl's tensor operators and the functions exported here (no shader to write). The file gives
the layer its config (`self.config`) and its weights, in Keras's `get_weights()` order, uploaded
once at build and named by the class's `weight_names` (docs/custom_layers.md).

A class is matched by the names Keras writes for it: `TransformerBlock` in a .keras file's
config, `package>TransformerBlock` in a .h5 file's (a class registered with
`keras.saving.register_keras_serializable(package=...)`); either spelling of the key matches.
The mapping in force is set for one load by `using` (kg.load_model does this).
"""
from __future__ import annotations

import contextlib
import contextvars

from ...errors import KerasGLError
from ...ops.elementwise import add, div, maximum, minimum, mul, sub  # noqa: F401
from ...ops.layout import reshape, transpose  # noqa: F401
from ...ops.matmul import dense, matmul  # noqa: F401
from ...ops.merge import concatenate  # noqa: F401
from ...ops.normalization import layer_norm  # noqa: F401
from ...ops.reduce import reduce  # noqa: F401
from ...ops.softmax import log_softmax, softmax  # noqa: F401
from ...tensors import ownership
from ..base import Layer
from ..refusals import refuse_layers

# Layers that hold another framework's code or a saved program rather than a Keras config.
refuse_layers({
    "TFSMLayer": "it calls a TensorFlow SavedModel, a program kerasgl does not read or run",
    "JaxLayer": "it wraps a JAX function, code that is never deserialised or run",
    "FlaxLayer": "it wraps a Flax module, code that is never deserialised or run",
    "TorchModuleWrapper": "it wraps a PyTorch module, code that is never deserialised or run",
})

# The functions a custom layer's call may use besides Tensor's operators and methods (+ - * / @,
# exp, relu, sum, mean, reshape, transpose, ...: kerasgl/ops/tensor_methods.py).
FUNCTIONS = ("matmul", "dense", "softmax", "log_softmax", "layer_norm", "concatenate",
             "reshape", "transpose", "add", "sub", "mul", "div", "maximum", "minimum", "reduce")
DOCS_PAGE = "docs/custom_layers.md"

_custom_objects: contextvars.ContextVar[dict] = contextvars.ContextVar("custom_objects", default={})


class CustomLayer(Layer):
    """The base class of a user's kerasgl layer standing for a custom Keras layer class.

    Subclasses give:
    - `weight_names`: one name per array the file holds for the layer, in Keras's get_weights()
      order (the order of its add_weight calls, then its sub-layers'); the arrays become GPU
      tensors in `self.weights` (a dict by name, in that order). Empty: the layer has no weights.
    - `call(self, inputs, **kwargs)`: the Keras layer's computation, with kerasgl Tensors.
      Temporaries it makes are freed when it returns; what it returns is kept.
    - `compute_output_shape(self, input_shape)` when the output's shape is not the input's
      (shapes are tuples, None for the batch dimension).
    - `build(self, input_shape)` only to prepare more at load; call `super().build(input_shape)`.
    `self.config` is the layer's config as the file saved it (get_config()'s keys).
    Masks are not passed to custom layers: a model whose mask reaches one is refused at load.
    """
    weight_names: tuple = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "call" in cls.__dict__:
            # Each call runs in a tidy scope: its temporaries are freed, what it returns survives.
            cls.call = ownership.tidy.wrap(cls.__dict__["call"])

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.weights: dict = {}
        self.keras_class_names = (spec.class_name,)

    def build(self, input_shape) -> None:
        if self.built:
            return
        names = tuple(self.weight_names)
        if len(names) != len(self.weights_np):
            raise self.shape_error(
                f"{type(self).__name__}.weight_names lists {len(names)} weights {list(names)}, "
                f"the file holds {len(self.weights_np)} arrays for this layer (shapes "
                f"{[tuple(w.shape) for w in self.weights_np]}, in Keras's get_weights() order)")
        for name, array in zip(names, self.weights_np):
            self.weights[name] = self.upload(array, name=name)
        self.built = True

    def dispose(self) -> None:
        super().dispose()
        self.weights = {}


def _checked(custom_objects) -> dict:
    if custom_objects is None:
        return {}
    if not isinstance(custom_objects, dict):
        raise TypeError(f"custom_objects must be a dict of Keras class name -> kerasgl layer "
                        f"class, not {type(custom_objects).__name__}")
    for key, value in custom_objects.items():
        if not isinstance(key, str):
            raise TypeError(f"custom_objects keys are Keras class names (str), got {key!r}")
        if not (isinstance(value, type) and issubclass(value, Layer)):
            raise KerasGLError(
                f"custom_objects[{key!r}] is {value!r}, not a kerasgl layer class: kerasgl cannot "
                f"run Keras code; write the layer as a subclass of kerasgl.CustomLayer "
                f"({DOCS_PAGE})")
    return dict(custom_objects)


@contextlib.contextmanager
def using(custom_objects):
    """Resolve custom class names from `custom_objects` for the loads made inside."""
    token = _custom_objects.set(_checked(custom_objects))
    try:
        yield
    finally:
        _custom_objects.reset(token)


def _short(name: str) -> str:
    return name.split(">")[-1]


def lookup(class_name: str):
    """The user's class for this Keras class name (exact spelling first, then by the name after
    a `package>` prefix on either side), or None."""
    objects = _custom_objects.get()
    if class_name in objects:
        return objects[class_name]
    matches = {cls for key, cls in objects.items() if _short(key) == _short(class_name)}
    return matches.pop() if len(matches) == 1 else None


def unknown_class_advice(class_name: str) -> str:
    """What the refusal of an unknown layer class tells the user to do."""
    return (f"if it is a custom layer of yours, write it as a kerasgl layer (a subclass of "
            f"kerasgl.CustomLayer) and pass kg.load_model(path, custom_objects="
            f"{{{_short(class_name)!r}: YourLayer}}) ({DOCS_PAGE})")
