"""Keras's attention layers (keras/src/layers/attention): Attention, AdditiveAttention,
MultiHeadAttention, GroupedQueryAttention.
Importing this package registers its layer classes."""
from . import dense_attention  # noqa: F401
from . import grouped_query_attention  # noqa: F401
from . import multi_head_attention  # noqa: F401
