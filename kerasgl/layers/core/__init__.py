"""Keras's core layers (keras/src/layers/core): InputLayer, Dense, EinsumDense, Embedding,
ReversibleEmbedding, Identity, Masking; and Pipeline.
Importing this package registers its layer classes."""
from . import dense  # noqa: F401
from . import einsum_dense  # noqa: F401
from . import embedding  # noqa: F401
from . import identity_pipeline  # noqa: F401
from . import input_layer  # noqa: F401
from . import masking  # noqa: F401
from . import reversible_embedding  # noqa: F401
