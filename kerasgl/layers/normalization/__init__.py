"""Keras's normalization layers (keras/src/layers/normalization).
Importing this package registers its layer classes."""
from . import batch_and_layer  # noqa: F401
from . import group_rms_unit_spectral  # noqa: F401
