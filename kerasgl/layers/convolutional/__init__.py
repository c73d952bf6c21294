"""Keras's convolution layers (keras/src/layers/convolutional), 1D to 3D.
Importing this package registers its layer classes."""
from . import conv  # noqa: F401
from . import conv3d  # noqa: F401
