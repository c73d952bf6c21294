"""keras_hub.layers.PositionEmbedding: a learned vector per position, added to token vectors.

Called on (batch, sequence, features) it returns rows [start_index, start_index + sequence) of
its table broadcast to the input's shape (the input's values are not read). Generation asks for
the rows of one position at a time (`rows`), which broadcast in the addition that follows.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFileError
from ..ops import slicing, tile_repeat_pad
from ..tensors import ownership
from ..tensors.tensor import Tensor, view
from ..layers.base import Layer


class PositionEmbedding(Layer):
    shaders = ("strided_slice.comp", "tile_repeat_pad.comp")
    mask_behaviour = "pass_through"      # KerasHub's layer supports masking and ignores it

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.expect_weights(1)
        self.length, self.dim = self.weights_np[0].shape
        if self.option("sequence_length", self.length) != self.length:
            raise ModelFileError(f"Layer '{self.name}' (PositionEmbedding): a table of "
                                 f"{self.length} positions, sequence_length="
                                 f"{self.option('sequence_length')}.")

    def check_span(self, start: int, length) -> None:
        if length is not None and not 0 <= start <= self.length - length:
            raise self.shape_error(f"positions {start} to {start + length - 1} are past its "
                                   f"{self.length} positions (max_sequence_length).")

    def compute_output_shape(self, input_shape):
        if len(input_shape) < 2 or input_shape[-1] != self.dim:
            raise self.shape_error(f"expects (..., sequence, {self.dim}) inputs. Received "
                                   f"{tuple(input_shape)}.")
        self.check_span(0, input_shape[-2])
        return tuple(input_shape)

    def build(self, input_shape):
        self.table = self.upload(np.asarray(self.weights_np[0], np.float32), name="embeddings")
        self.built = True

    def rows(self, start: int, length: int) -> Tensor:
        """Positions start .. start + length - 1: a new (1, length, features) tensor."""
        self.check_span(start, length)
        window = [(start, length, 1), (0, self.dim, 1)]
        return ownership.tidy.run(
            lambda: view(slicing.strided_slice(self.table, window), (1, length, self.dim)))

    def call(self, inputs, start_index=0, **kwargs):
        shape = inputs.shape

        def compute():
            rows = self.rows(int(start_index), shape[-2])
            lead = view(rows, (1,) * (len(shape) - 2) + rows.shape[1:])
            return tile_repeat_pad.tile(lead, tuple(shape[:-2]) + (1, 1))
        return ownership.tidy.run(compute)
