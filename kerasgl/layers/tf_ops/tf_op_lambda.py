"""TensorFlow calls tf.keras (TF >= 2.4, tf-keras) recorded as layers: TFOpLambda (`x + 1`,
`tf.nn.depth_to_space(x, 2)`, `tf.image.resize(x, size)`) and SlicingOpLambda (`x[:, 1:3]`).

The config's `function` names the TensorFlow symbol ("math.reduce_mean", "compat.v1.transpose",
"__operators__.getitem"); the inbound node holds the call (arguments.py). The functions
kerasgl runs are in this package's tables (functions.py); any other is refused at load, naming
it. docs/layers.md lists them (scripts/list_layers.py), docs/tf_op_layers.md says how they run.
"""
from __future__ import annotations

from ..base import register
from .call_layer import TensorFlowCall
from .functions import FUNCTIONS


@register("TFOpLambda", "SlicingOpLambda")
class TFOpLambda(TensorFlowCall):

    def make_function(self):
        name = str(self.option("function", ""))
        function = self.function_named(name)
        if function is None:
            raise self.unsupported(
                f"the TensorFlow function tf.{name} (kerasgl runs {len(FUNCTIONS)} TensorFlow "
                "functions without TensorFlow, listed in docs/layers.md; rebuild the model with "
                "Keras layers or keras.ops for the others)")
        return function
