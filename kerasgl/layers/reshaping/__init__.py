"""Keras's reshaping layers (keras/src/layers/reshaping): Flatten, Reshape, Permute, RepeatVector,
and the spatial padding, cropping and upsampling layers, 1D to 3D.
Importing this package registers its layer classes."""
from . import flatten_reshape  # noqa: F401
from . import spatial  # noqa: F401
from . import spatial3d  # noqa: F401
