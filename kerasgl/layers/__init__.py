"""Keras layers, one class per Keras class_name, in folders by Keras family as keras/src/layers
has them (core, activations, convolutional, pooling, normalization, merging, reshaping, rnn,
attention, preprocessing, regularization), plus kerasgl's own: applications (layers that
keras.applications defines), tf_ops (TensorFlow operations tf.keras recorded as layers) and custom
(layers users write). The base class and the registry from class_name to class are in base.py;
importing this package registers every family in LAYER_CLASSES.

keras.ops operations recorded in Keras 3 graphs are not layers: they are in kerasgl/keras_ops/.
"""
from .base import LAYER_CLASSES, Layer, register  # noqa: F401
from . import core  # noqa: F401,E402
from . import activations  # noqa: F401,E402
from . import regularization  # noqa: F401,E402
from . import merging  # noqa: F401,E402
from . import normalization  # noqa: F401,E402
from . import preprocessing  # noqa: F401,E402
from . import convolutional  # noqa: F401,E402
from . import pooling  # noqa: F401,E402
from . import reshaping  # noqa: F401,E402
from . import rnn  # noqa: F401,E402
from . import attention  # noqa: F401,E402
from . import applications  # noqa: F401,E402
from . import tf_ops  # noqa: F401,E402
from . import custom  # noqa: F401,E402
