"""A functional ModelSpec written in Python, as a KerasHub backbone's __init__ builds its model.

KerasHub saves a backbone's hyperparameters, not its layer graph: each architecture module
rebuilds the graph here, layer by layer and call by call, with the names KerasHub gives its
layers, so the result is an ordinary kerasgl model (plans, memory accounting, profiling,
summary, get_layer) made of kerasgl's layers and the KerasHub layers of this package.

    net = Functional("gpt2_backbone", source)
    ids = net.input("token_ids", "int32")
    x = net.call(net.layer("ReversibleEmbedding", "token_embedding", config, weights), ids)
    spec = net.spec(outputs=[x])
"""
from __future__ import annotations

from ..saving.spec import LayerSpec, ModelSpec, NodeSpec, TensorRef


class Functional:
    def __init__(self, name: str, source: str):
        self.name, self.source = name, source
        self.layers: list[LayerSpec] = []
        self.inputs: list[TensorRef] = []
        self._input_keys: list[str] = []

    def input(self, name: str, dtype: str, shape=(None, None)) -> TensorRef:
        """A model input (batch and sequence dimensions free by default)."""
        self.layers.append(LayerSpec("InputLayer", name, {"name": name, "dtype": dtype,
                                                          "batch_shape": list(shape),
                                                          "sparse": False, "ragged": False}))
        ref = TensorRef(name)
        self.inputs.append(ref)
        self._input_keys.append(name)
        return ref

    def layer(self, class_name: str, name: str, config: dict, weights=(),
              module: str | None = None) -> LayerSpec:
        """A layer (not yet called): kerasgl's class for `class_name` reads `config`. A keras.ops
        operation recorded in the graph (`x[:, 0]`) names its Keras module."""
        spec = LayerSpec(class_name, name, {"name": name, "trainable": True, "dtype": "float32",
                                            **config}, module=module, weights=list(weights))
        self.layers.append(spec)
        return spec

    def call(self, layer: LayerSpec, *args, **kwargs) -> TensorRef:
        """One call of `layer` (args and kwargs hold TensorRefs and plain values, as Keras
        records them); its output."""
        layer.inbound_nodes.append(NodeSpec(list(args), dict(kwargs)))
        return TensorRef(layer.name, len(layer.inbound_nodes) - 1)

    def spec(self, outputs) -> ModelSpec:
        """The model, with these outputs: a list, or a dict (BERT's sequence and pooled
        outputs), which Keras orders by key, as it does the dict of inputs."""
        output_keys = sorted(outputs) if isinstance(outputs, dict) else None
        if output_keys is not None:
            outputs = [outputs[key] for key in output_keys]
        order = sorted(range(len(self.inputs)), key=lambda i: self._input_keys[i])
        inputs = [self.inputs[i] for i in order]
        keys = [self._input_keys[i] for i in order]
        shapes = [next(s.config["batch_shape"] for s in self.layers if s.name == ref.layer)
                  for ref in inputs]
        dtypes = [next(s.config["dtype"] for s in self.layers if s.name == ref.layer)
                  for ref in inputs]
        return ModelSpec("Functional", self.name, self.layers, inputs, list(outputs), 3,
                         self.source, shapes, dtypes, keys, output_keys)
