"""TODO docstring"""
from __future__ import annotations

import math

from ...ops import layout, merge
from ...tensors import ownership
from ...tensors.tensor import view
from ..base import Layer, register
from ..core.dense import _rank_error


@register("Flatten")
class Flatten(Layer):
    """(batch, ...) -> (batch, prod(...)); channels_first inputs are moved to channels-last first,
    as Keras does, so the flattened order matches."""

    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.channels_first = self.option("data_format", "channels_last") == "channels_first"

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        size = None if any(d is None for d in rest) else math.prod(rest)
        return (input_shape[0], size)

    def call(self, inputs, **kwargs):
        shape = (inputs.shape[0], math.prod(inputs.shape[1:]))
        if self.channels_first and inputs.ndim > 2:
            return ownership.tidy.run(
                lambda: view(layout.transpose(inputs, (0, *range(2, inputs.ndim), 1)), shape))
        return view(inputs, shape)


@register("Reshape")
class Reshape(Layer):
    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.target_shape = tuple(int(d) for d in self.option("target_shape"))
        if sum(1 for d in self.target_shape if d == -1) > 1:
            raise self.shape_error(f"target_shape {self.target_shape} has more than one -1.")

    def _resolve(self, input_shape):
        rest = input_shape[1:]
        if any(d is None for d in rest):
            return self.target_shape if -1 not in self.target_shape else \
                tuple(None if d == -1 else d for d in self.target_shape)
        try:
            return layout.resolve_shape(self.target_shape, math.prod(rest), rest)
        except Exception as exc:
            raise self.shape_error(f"cannot reshape input shape {tuple(input_shape)} to target "
                                   f"shape {self.target_shape}: {exc}") from None

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + tuple(self._resolve(input_shape))

    def call(self, inputs, **kwargs):
        return view(inputs, (inputs.shape[0],) + tuple(self._resolve(inputs.shape)))


@register("Permute")
class Permute(Layer):
    shaders = ("transpose.comp",)

    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.dims = tuple(int(d) for d in self.option("dims"))
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise self.shape_error(f"dims {self.dims} must be a permutation of 1..{len(self.dims)}.")

    def compute_output_shape(self, input_shape):
        if len(input_shape) != len(self.dims) + 1:
            raise _rank_error(self, f"inputs of rank {len(self.dims) + 1}", input_shape)
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def call(self, inputs, **kwargs):
        self.compute_output_shape(inputs.shape)
        return layout.transpose(inputs, (0,) + self.dims)


@register("RepeatVector")
class RepeatVector(Layer):
    shaders = ("concat.comp",)

    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.n = int(self.option("n"))

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 2:
            raise _rank_error(self, "inputs of rank 2 (batch, features)", input_shape)
        return (input_shape[0], self.n, input_shape[1])

    def call(self, inputs, **kwargs):
        self.compute_output_shape(inputs.shape)
        row_shape = (inputs.shape[0], 1, inputs.shape[1])
        return ownership.tidy.run(
            lambda: merge.concatenate([view(inputs, row_shape)] * self.n, axis=1))
