"""AdaptiveAveragePooling1D/2D/3D and AdaptiveMaxPooling1D/2D/3D: a fixed output_size whatever
the input's, each output cell pooling Keras's bin of input cells (ops/adaptive_pool.py).
channels_first inputs are moved to channels-last and back around the one dispatch."""
from __future__ import annotations

from ...ops import adaptive_pool, layout
from ...tensors import ownership
from ..base import Layer, register


class AdaptivePooling(Layer):
    shaders = ("adaptive_pool.comp",)
    mask_behaviour = "drops"        # Keras's adaptive pooling layers do not support masking
    weight_arrays = 0
    spatial = 0
    mode = ""

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        size = self.option("output_size")
        size = (size,) * self.spatial if isinstance(size, int) else tuple(size or ())
        if len(size) != self.spatial or not all(isinstance(s, int) and s > 0 for s in size):
            raise self.unsupported(f"output_size={self.option('output_size')!r}")
        self.output_size = size
        self.data_format = self.option("data_format") or "channels_last"
        if self.data_format not in ("channels_last", "channels_first"):
            raise self.unsupported(f"data_format={self.data_format!r}")
        if self.data_format == "channels_first":
            self.shaders = ("transpose.comp", "adaptive_pool.comp")

    def compute_output_shape(self, input_shape):
        if len(input_shape) != self.spatial + 2:
            raise self.shape_error(f"expects inputs of rank {self.spatial + 2}. Received input "
                                   f"shape {tuple(input_shape)}.")
        if self.data_format == "channels_last":
            return (input_shape[0], *self.output_size, input_shape[-1])
        return (input_shape[0], input_shape[1], *self.output_size)

    def call(self, inputs, **kwargs):
        self.compute_output_shape(inputs.shape)
        if self.data_format == "channels_last":
            return adaptive_pool.adaptive_pool(inputs, self.mode, self.output_size)
        rank = self.spatial + 2

        def compute():
            moved = layout.transpose(inputs, (0, *range(2, rank), 1))
            pooled = adaptive_pool.adaptive_pool(moved, self.mode, self.output_size)
            return layout.transpose(pooled, (0, rank - 1, *range(1, rank - 1)))
        return ownership.tidy.run(compute)


def _adaptive(class_name: str, spatial: int, mode: str):
    cls = type(class_name, (AdaptivePooling,), {"spatial": spatial, "mode": mode,
                                                "__doc__": f"Keras's {class_name}."})
    return register(class_name)(cls)


AdaptiveAveragePooling1D = _adaptive("AdaptiveAveragePooling1D", 1, "avg")
AdaptiveAveragePooling2D = _adaptive("AdaptiveAveragePooling2D", 2, "avg")
AdaptiveAveragePooling3D = _adaptive("AdaptiveAveragePooling3D", 3, "avg")
AdaptiveMaxPooling1D = _adaptive("AdaptiveMaxPooling1D", 1, "max")
AdaptiveMaxPooling2D = _adaptive("AdaptiveMaxPooling2D", 2, "max")
AdaptiveMaxPooling3D = _adaptive("AdaptiveMaxPooling3D", 3, "max")
