"""keras.ops.nn (keras/src/ops/nn.py) as recorded in Keras 3 graphs: activations, spatial
(convolution, pooling, depth/space), folding, encoding, normalization, attention, losses.
Importing this package registers its op nodes."""
from . import activations  # noqa: F401
from . import attention  # noqa: F401
from . import encoding  # noqa: F401
from . import folding  # noqa: F401
from . import losses  # noqa: F401
from . import normalization  # noqa: F401
from . import spatial  # noqa: F401
