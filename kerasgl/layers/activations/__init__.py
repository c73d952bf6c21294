"""Keras's activation layers (keras/src/layers/activations): Activation, ReLU, LeakyReLU, PReLU, ELU,
Softmax, ThresholdedReLU.
Importing this package registers its layer classes."""
from . import activation  # noqa: F401
from . import activation_layers  # noqa: F401
