"""Keras layers, one class per Keras class_name, grouped by family as Keras groups them.
Importing this package registers every layer family in LAYER_CLASSES."""
from .base import LAYER_CLASSES, Layer, register  # noqa: F401
from . import input_layer  # noqa: F401,E402
from . import op_nodes  # noqa: F401,E402
from . import op_nodes_math  # noqa: F401,E402
from . import op_nodes_indexing  # noqa: F401,E402
from . import op_nodes_indices  # noqa: F401,E402
from . import core  # noqa: F401,E402
from . import regularization  # noqa: F401,E402
from . import advanced_activations  # noqa: F401,E402
from . import merging  # noqa: F401,E402
from . import normalization  # noqa: F401,E402
from . import preprocessing  # noqa: F401,E402
from . import embedding  # noqa: F401,E402
from . import convolutional  # noqa: F401,E402
from . import pooling  # noqa: F401,E402
from . import reshaping  # noqa: F401,E402
from . import convolutional3d  # noqa: F401,E402
from . import pooling3d  # noqa: F401,E402
from . import reshaping3d  # noqa: F401,E402
from . import recurrent  # noqa: F401,E402
from . import attention  # noqa: F401,E402
from . import multi_head_attention  # noqa: F401,E402
from . import wrappers  # noqa: F401,E402
from . import masking  # noqa: F401,E402
from . import einsum_dense  # noqa: F401,E402
from . import normalization_extra  # noqa: F401,E402
from . import structural  # noqa: F401,E402
from . import adaptive_pooling  # noqa: F401,E402
from . import reversible_embedding  # noqa: F401,E402
from . import grouped_query_attention  # noqa: F401,E402
from . import application_layers  # noqa: F401,E402
from . import tf_op_layers  # noqa: F401,E402
from . import conv_recurrent  # noqa: F401,E402
from . import image_preprocessing  # noqa: F401,E402
from . import category_layers  # noqa: F401,E402
