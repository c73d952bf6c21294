"""Keras's regularization layers (keras/src/layers/regularization): identity at inference.
Importing this package registers its layer classes."""
from . import inference_identity  # noqa: F401
