"""Keras's merging layers (keras/src/layers/merging): Add, Subtract, Multiply, Average, Maximum,
Minimum, Concatenate, Dot.
Importing this package registers its layer classes."""
from . import merging  # noqa: F401
