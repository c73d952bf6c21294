"""InputLayer: where a model's data enters the graph. It computes nothing; the graph feeds it."""
from __future__ import annotations

from ..base import Layer, register

# Keras dtypes an input may declare -> the dtype of the kerasgl tensor that carries it.
INPUT_DTYPES = {
    "float16": "float32", "bfloat16": "float32", "float32": "float32", "float64": "float32",
    "int8": "int32", "int16": "int32", "int32": "int32", "int64": "int32",
    "uint8": "int32", "uint16": "int32", "uint32": "int32", "bool": "bool",
}
# Strings never reach the GPU: host layers (layers/preprocessing/lookup.py) turn them into numbers first.
INPUT_DTYPES["string"] = "string"


def input_dtype(value) -> str:
    """The kerasgl dtype for an InputLayer's configured dtype (a name or a DTypePolicy dict)."""
    if isinstance(value, dict):
        value = (value.get("config") or {}).get("name", "float32")
    return INPUT_DTYPES.get(str(value or "float32"), "float32")


@register("InputLayer")
class InputLayer(Layer):
    """Keras 3 `batch_shape` or Keras 2 `batch_input_shape`; the batch dimension may be None."""
    mask_behaviour = "pass_through"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        shape = self.option("batch_shape", self.option("batch_input_shape"))
        if shape is None and self.option("shape") is not None:
            shape = [None] + list(self.option("shape"))
        if shape is None:
            raise self.shape_error("the file gives no input shape (batch_shape).")
        self.batch_shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = input_dtype(self.option("dtype"))
        if self.option("sparse") or self.option("ragged"):
            raise self.unsupported("a sparse or ragged input")

    def compute_output_shape(self, input_shape=None):
        return self.batch_shape

    def call(self, inputs=None, **kwargs):
        # The graph hands the model's input straight to this layer's consumers; this is only
        # reached when an InputLayer is called explicitly, and passes the tensor through.
        return inputs
