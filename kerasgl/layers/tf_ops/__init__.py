"""TensorFlow operations that tf.keras (Keras 2) recorded as layers in functional models
(TFOpLambda).
Importing this package registers its layer classes."""
from . import tf_op_lambda  # noqa: F401
