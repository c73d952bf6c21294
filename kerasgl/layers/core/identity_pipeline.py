"""Layers that only arrange other work: Identity (its input, as is) and Pipeline (a list of layers
applied one after the other, as a plain layer)."""
from __future__ import annotations

from ...errors import ModelFileError
from ...tensors import ownership
from ...tensors.tensor import view
from ..base import Layer, declared_weight_count, register
from ..rnn.wrappers import inner_layer


@register("Identity")
class Identity(Layer):
    mask_behaviour = "pass_through"     # Keras: supports_masking, returns its input
    returns_its_input = True
    weight_arrays = 0

    def call(self, inputs, **kwargs):
        return view(inputs, inputs.shape)


def _inner_configs(config) -> list:
    layers = config.get("layers")
    return layers if isinstance(layers, list) else []


@register("Pipeline")
class Pipeline(Layer):
    """Each layer of `layers` called on the previous one's output, as Keras's Pipeline.call.
    Keras hands a mask reaching the Pipeline to its inner layers and keeps what they make of it;
    kerasgl refuses such a mask at load (refuses_mask), and inner layers that make a mask: masks
    never flow inside, and the inner layers run as Keras runs them with none."""
    mask_behaviour = "consumes"

    def refuses_mask(self, keras_major: int) -> bool:
        return True

    @classmethod
    def weight_count(cls, config):
        counts = [declared_weight_count(c.get("class_name"), c.get("config"))
                  for c in _inner_configs(config) if isinstance(c, dict)]
        return None if None in counts else sum(counts)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        configs = self.option("layers")
        if not isinstance(configs, list) or not configs:
            raise self.unsupported(f"a Pipeline whose layers are {configs!r}")
        weights = list(self.weights_np)
        self.layers = []
        try:
            for index, value in enumerate(configs):
                count = declared_weight_count((value or {}).get("class_name"),
                                              (value or {}).get("config"))
                if count is None and (not weights or index == len(configs) - 1):
                    count = len(weights)      # what is left (nothing, or the last layer's)
                if count is None:
                    raise self.unsupported(f"an inner {value.get('class_name')} whose weight "
                                           "count is not fixed, before the last inner layer")
                if count > len(weights):
                    raise ModelFileError(f"Layer '{self.name}' (Pipeline): the file holds "
                                         f"{len(self.weights_np)} weight arrays, its layers "
                                         "need more.")
                layer = inner_layer(self, value, weights[:count], f"layer{index}")
                self.layers.append(layer)
                weights = weights[count:]
                if layer.mask_behaviour == "computes":
                    raise self.unsupported(f"an inner {layer.class_name} that makes a mask")
            if weights:
                raise ModelFileError(f"Layer '{self.name}' (Pipeline): the file holds "
                                     f"{len(weights)} weight arrays more than its layers use.")
        except Exception:
            self.dispose()
            raise
        self.shaders = tuple(dict.fromkeys(s for layer in self.layers for s in layer.shaders))

    def compute_output_shape(self, input_shape):
        for layer in self.layers:
            input_shape = layer.compute_output_shape(input_shape)
        return input_shape

    def build(self, input_shape):
        for layer in self.layers:
            layer.build(input_shape)
            input_shape = layer.compute_output_shape(input_shape)
        self.built = True

    def call(self, inputs, **kwargs):
        def compute():
            x = inputs
            for layer in self.layers:
                x = layer.call(x)
            return x if x is not inputs else view(x, x.shape)
        return ownership.tidy.run(compute)

    def dispose(self) -> None:
        for layer in self.layers:
            layer.dispose()
        super().dispose()
