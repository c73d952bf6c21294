"""Keras's pooling layers (keras/src/layers/pooling): windowed, global and adaptive, 1D to 3D.
Importing this package registers its layer classes."""
from . import adaptive_pooling  # noqa: F401
from . import pooling  # noqa: F401
from . import pooling3d  # noqa: F401
