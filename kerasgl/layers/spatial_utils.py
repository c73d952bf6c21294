"""What the convolutional, pooling and spatial reshaping layers share: reading Keras's integer or
tuple options, channels_first support (transpose to channels-last and back, as Keras's own
channels-last-only paths do), and running 1D layers as 2D over a single row."""
from __future__ import annotations

from ..ops import layout
from ..tensors import ownership
from ..tensors.tensor import Tensor, view
from .base import Layer


def int_tuple(value, n: int, what: str = "value") -> tuple[int, ...]:
    """Keras's standardize_tuple: an int repeated n times, or a sequence of n ints."""
    if isinstance(value, (int, float)):
        return (int(value),) * n
    values = tuple(int(v) for v in value)
    if len(values) != n:
        raise ValueError(f"{what} must be an int or {n} ints. Received {value!r}.")
    return values


def pair_tuple(value, n: int) -> tuple[tuple[int, int], ...]:
    """Padding / cropping amounts: int -> ((v, v),) * n; (a, b) for n == 1; n ints -> symmetric
    pairs; n pairs as they are."""
    if isinstance(value, (int, float)):
        return ((int(value), int(value)),) * n
    value = list(value)
    if n == 1 and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return ((int(value[0]), int(value[1])),)
    if len(value) == n and all(isinstance(v, (int, float)) for v in value):
        return tuple((int(v), int(v)) for v in value)
    if len(value) == n:
        return tuple(tuple(int(x) for x in int_tuple(v, 2)) for v in value)
    raise ValueError(f"Expected an int, {n} ints or {n} pairs. Received {value!r}.")


def as_rows(x: Tensor) -> Tensor:
    """[batch, steps, channels] seen as [batch, 1, steps, channels] (a view)."""
    return view(x, (x.shape[0], 1, x.shape[1], x.shape[2]))


def from_rows(y: Tensor) -> Tensor:
    """[batch, 1, steps, channels] -> [batch, steps, channels] (a view: the caller's tidy scope
    frees y, the view keeps the data)."""
    return view(y, (y.shape[0], y.shape[2], y.shape[3]))


class SpatialLayer(Layer):
    """A layer over [batch, *spatial (spatial_rank axes), channels] inputs. Subclasses implement
    `channels_last_call(x)` and `channels_last_shape(shape)`; with data_format="channels_first"
    the input is transposed to channels-last and the result back."""
    spatial_rank = 2
    moves_channels_back = True   # False for layers whose output has no spatial axes
    # Convolutions, poolings, paddings, croppings and upsamplings: the values do not depend on a
    # mask and Keras 3 drops it (supports_masking is False), with a warning.
    mask_behaviour = "drops"

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        data_format = self.option("data_format") or "channels_last"
        if data_format not in ("channels_last", "channels_first"):
            raise self.unsupported(f"data_format={data_format!r}")
        self.channels_first = data_format == "channels_first"

    def run_2d(self, x, op):
        """Run op(x4d) -> y4d, with 1D inputs seen as one row."""
        if self.spatial_rank == 2:
            return op(x)
        return ownership.tidy.run(lambda: from_rows(op(as_rows(x))))

    def check_rank(self, shape) -> None:
        if len(shape) != self.spatial_rank + 2:
            raise self.shape_error(f"expects inputs of rank {self.spatial_rank + 2}. "
                                   f"Received input shape {tuple(shape)}.")

    def _last_perm(self):
        return (0, *range(2, self.spatial_rank + 2), 1)

    def _first_perm(self):
        return (0, self.spatial_rank + 1, *range(1, self.spatial_rank + 1))

    def compute_output_shape(self, input_shape):
        self.check_rank(input_shape)
        shape = tuple(input_shape)
        if self.channels_first:
            shape = tuple(shape[i] for i in self._last_perm())
        out = tuple(self.channels_last_shape(shape))
        if self.channels_first and self.moves_channels_back:
            out = tuple(out[i] for i in self._first_perm())
        return out

    def call(self, inputs, **kwargs):
        self.check_rank(inputs.shape)
        if not self.channels_first:
            return self.channels_last_call(inputs)

        def compute():
            result = self.channels_last_call(layout.transpose(inputs, self._last_perm()))
            if not self.moves_channels_back:
                return result
            return layout.transpose(result, self._first_perm())
        return ownership.tidy.run(compute)

    def channels_last_shape(self, shape):
        raise NotImplementedError

    def channels_last_call(self, x: Tensor) -> Tensor:
        raise NotImplementedError
