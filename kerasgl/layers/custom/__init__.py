"""Layers kerasgl's users write for the custom layer classes of their Keras models.

`kerasgl.layers.custom` is public: a custom layer subclasses `CustomLayer` and composes the
functions re-exported here (docs/custom_layers.md); custom_layer.py holds them."""
from .custom_layer import (CustomLayer, add, concatenate, dense, div, layer_norm,  # noqa: F401
                           log_softmax, matmul, maximum, minimum, mul, reduce, reshape, softmax,
                           sub, transpose)
