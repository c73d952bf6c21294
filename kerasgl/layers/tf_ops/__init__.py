"""TensorFlow calls that tf.keras (Keras 2) recorded as layers in functional models: TFOpLambda
and SlicingOpLambda (tf_op_lambda.py), TensorFlowOpLayer (node_def.py), run without TensorFlow
by the functions of this package's tables (functions.py; one module per family below).
Importing this package registers its layer classes and functions."""
from . import (activations, elementwise, gathering, image_resize, joining, layout,  # noqa: F401
               products, reductions, shape_values, slicing)
from . import node_def, tf_op_lambda  # noqa: F401
