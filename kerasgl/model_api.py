"""keras.Model's inference API on kerasgl.Model: `model(x)`, `predict_on_batch`, `get_weights`,
`get_config`, with Keras's semantics (kerasgl.Model inherits them from KerasModelAPI).

`model(x)` returns GPU tensors, as Keras's __call__ returns tensors; everything else answers with
numpy, from the file's arrays and config (layers/keras_api.py), never from what kerasgl made of
them at load.
"""
from __future__ import annotations

import numpy as np

from .compiler.feeding import arrange_inputs, check_input
from .compiler import host_stage
from .errors import KerasGLError
from .layers import keras_api
from .tensors import ownership
from .tensors.tensor import Tensor, tensor as upload


class KerasModelAPI:
    """Mixin of kerasgl.Model: needs its predict, inputs, layers, name, _spec and _check_alive."""

    @property
    def graph(self):
        """The compiled graph of layers (compiler/graph.py): for kerasgl's own tools (summary,
        the compile-ahead helper), not a Keras API."""
        return self._graph

    @property
    def output_names(self) -> list:
        """The outputs' names as predict's answers would name them: the keys of a model built
        with dict outputs, else the output layers' names (output_0, output_1, ... where two
        share one)."""
        keys = self._spec.output_keys          # set by the file: a plain list, no GPU
        if keys and len(keys) == len(self.outputs):
            return list(keys)
        names = [spec.name for spec in self.outputs]
        return names if len(set(names)) == len(names) else [f"output_{i}" for i in range(len(names))]

    def __call__(self, inputs, training=None, mask=None):
        """Run the model and return GPU tensors, as keras.Model.__call__ returns tensors: a
        Tensor for one output, else a list (a dict for a model built with dict outputs).

        inputs: as predict takes them (numpy arrays or Tensors; a list or dict for several). The
        whole batch is one GPU run (split only where a tensor would exceed the GPU's buffer limit).
        The results belong to the current tidy scope, or outside any scope to the caller, who
        disposes them; uploaded numpy inputs are freed before returning. kerasgl runs inference
        only: training=True and an explicit mask are refused (KerasGLError)."""
        self._check_alive()
        if training:
            raise KerasGLError(f"Model '{self.name}' runs inference only: training=True is not "
                               "supported (Dropout and BatchNormalization always act as at "
                               "inference).")
        if mask is not None:
            raise KerasGLError(f"Model '{self.name}': a mask argument to the model's call is not "
                               "supported; masks come from the model's own layers (Masking, "
                               "Embedding(mask_zero=True)).")
        host_stage.refuse_tensors(self._graph, self.name, "model(x)")
        specs = self.inputs
        values = arrange_inputs(inputs, specs, self.name, self._spec.input_keys)

        def run():
            tensors = [v if isinstance(v, Tensor) else
                       upload(check_input(v, s, self.name, self._finite_inputs_for), dtype=s.dtype)
                       for v, s in zip(values, specs)]
            return self.predict(tensors if len(tensors) > 1 else tensors[0], verbose=0)
        # The uploads die with this scope; the results move to the caller's.
        return ownership.tidy.run(run)

    def predict_on_batch(self, x):
        """keras.Model.predict_on_batch: `x` as one batch, numpy out (one array, a list, or a
        dict for a model built with dict outputs), whether the inputs are numpy or Tensors."""
        self._check_alive()
        values = arrange_inputs(x, self.inputs, self.name, self._spec.input_keys)
        shapes = [v.shape if isinstance(v, Tensor) else np.shape(v) for v in values]
        count = max([int(shape[0]) for shape in shapes if len(shape)] or [1])
        # A model whose inputs fix the batch size (stateful RNNs) runs in batches of that size.
        fixed = any(s.shape and s.shape[0] is not None for s in self.inputs)
        # Tensor inputs give Tensor results: read back, they die with this scope.
        return ownership.tidy.run(lambda: _as_numpy(
            self.predict(x, batch_size=None if fixed else max(1, count), verbose=0)))

    def get_weights(self) -> list:
        """keras.Model.get_weights(): every layer's get_weights(), layer after layer in `layers`
        order (a nested model's in its own layers' order): numpy copies of the arrays the file
        stores, not of what kerasgl uploaded after packing and folding."""
        return [w for layer in self.layers for w in layer.get_weights()]

    def get_config(self) -> dict:
        """keras.Model.get_config() as kerasgl read it: name, layers (class_name, name,
        normalised config; nested models as their model config) and, for a functional model,
        each layer's inbound_nodes and the input_layers / output_layers (layers/keras_api.py
        says what differs from Keras: the tensors' shapes and dtypes in inbound_nodes)."""
        return keras_api.model_config(self._spec)


def _as_numpy(result):
    """predict's result with each Tensor read back."""
    if isinstance(result, Tensor):
        return result.numpy()
    if isinstance(result, dict):
        return {key: _as_numpy(value) for key, value in result.items()}
    if isinstance(result, list):
        return [_as_numpy(value) for value in result]
    return result
