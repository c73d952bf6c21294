"""What predict() accepts, checked against the model's inputs, and how it is cut into batches.

Inputs follow keras.Model.predict: one array for a one-input model; a list (in the model's input
order) or a dict (by input name) for several. numpy arrays and kerasgl Tensors are accepted;
anything else goes through np.asarray. Mismatched shapes or dtypes raise ShapeError with the
expected and the received shape.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from ..errors import ShapeError
from .graph import TensorSpec, format_shape
from ..ops import dispatch
from ..tensors.tensor import Tensor, empty

DEFAULT_BATCH_SIZE = 32


def _is_single(value) -> bool:
    return isinstance(value, (np.ndarray, Tensor)) or np.isscalar(value)


def arrange_inputs(x, specs: list[TensorSpec], model_name: str, keys: list | None = None) -> list:
    """The inputs as a list in the model's input order (arrays / Tensors, unchecked). A dict is
    keyed by input name, or by the keys the model was built with (`keys`, for dict inputs)."""
    names = [s.name for s in specs]
    if isinstance(x, dict) and keys and set(x) == set(keys):
        return [x[k] for k in keys]
    if isinstance(x, dict):
        missing = [n for n in names if n not in x]
        extra = [k for k in x if k not in names]
        if missing or extra:
            raise ShapeError(f"Model '{model_name}' takes inputs named {names}; the dict given "
                             f"{'lacks ' + str(missing) if missing else ''}"
                             f"{' and ' if missing and extra else ''}"
                             f"{'has unknown ' + str(extra) if extra else ''}.")
        return [x[n] for n in names]
    if isinstance(x, (list, tuple)):
        if len(specs) == 1 and not (len(x) == 1 and _is_single(x[0]) and not np.isscalar(x[0])):
            return [x]            # nested Python lists of numbers for a one-input model
        if len(x) != len(specs):
            raise ShapeError(f"Model '{model_name}' expects {len(specs)} input(s) {names}, "
                             f"received a list of {len(x)}.")
        return list(x)
    if len(specs) != 1:
        raise ShapeError(f"Model '{model_name}' expects {len(specs)} inputs {names} (pass a list "
                         "or a dict), received one array.")
    return [x]


def _check_shape(shape, spec: TensorSpec, model_name: str) -> None:
    """Rank and every dimension but the batch: a model built for a fixed batch size still takes
    any number of samples, run in batches of that size (see fixed_batch_size)."""
    expected = spec.shape
    fits = len(shape) == len(expected) and all(
        e is None or e == r for e, r in zip(expected[1:], shape[1:]))
    if not fits:
        raise ShapeError(f"Model '{model_name}' input '{spec.name}': expected shape "
                         f"{format_shape(expected)}, received shape {format_shape(shape)}.")


def check_input(value, spec: TensorSpec, model_name: str):
    """A numpy array of the input's dtype, or the Tensor itself, after checking shape and dtype."""
    if isinstance(value, Tensor):
        value._check_alive()
        _check_shape(value.shape, spec, model_name)
        if value.dtype != spec.dtype:
            raise ShapeError(f"Model '{model_name}' input '{spec.name}': expected a {spec.dtype} "
                             f"tensor of shape {format_shape(spec.shape)}, received a "
                             f"{value.dtype} tensor of shape {format_shape(value.shape)}.")
        return value
    array = np.asarray(value)
    _check_shape(array.shape, spec, model_name)
    kind = array.dtype.kind
    if kind not in "biuf":
        raise ShapeError(f"Model '{model_name}' input '{spec.name}': expected numbers "
                         f"({spec.dtype}) of shape {format_shape(spec.shape)}, received "
                         f"{array.dtype} data of shape {format_shape(array.shape)}.")
    if spec.dtype == "int32" and kind in "iu" and array.size and (
            array.min() < np.iinfo(np.int32).min or array.max() > np.iinfo(np.int32).max):
        # The GPU holds int32: a wider value would wrap silently (2**40 would read as 0).
        raise ShapeError(f"Model '{model_name}' input '{spec.name}' takes int32 values; received "
                         f"{array.dtype} values outside the int32 range, shape "
                         f"{format_shape(array.shape)}.")
    if spec.dtype == "int32" and kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            raise ShapeError(f"Model '{model_name}' input '{spec.name}' takes integers (int32) of "
                             f"shape {format_shape(spec.shape)}; received {array.dtype} values "
                             f"that are not whole numbers, shape {format_shape(array.shape)}.")
    return np.ascontiguousarray(array, dtype=np.float32 if spec.dtype == "float32" else np.int32)


def batch_count(values: list, model_name: str) -> int:
    sizes = {int(v.shape[0]) for v in values}
    if len(sizes) > 1:
        raise ShapeError(f"Model '{model_name}': all inputs must have the same number of samples "
                         f"(first dimension); received {[int(v.shape[0]) for v in values]}.")
    return sizes.pop()


# -------------------------------------------------------------------------------------------------
# Cutting GPU tensors into batches and joining the results (byte ranges of buffers: a batch is a
# contiguous run of rows, so no shader is needed).
# -------------------------------------------------------------------------------------------------
def batch_slice(x: Tensor, start: int, stop: int) -> Tensor:
    """Rows [start, stop) of a buffer tensor, as a new tensor."""
    row = x.nbytes // max(1, x.shape[0])
    out = empty((stop - start,) + tuple(x.shape[1:]), x.dtype)
    if out.size:
        dispatch.copy_buffer(out, x, size=out.nbytes, read_offset=start * row)
    return out


def concat_batches(parts: list[Tensor]) -> Tensor:
    """The batches stacked along the first axis, as one new buffer tensor."""
    total = sum(p.shape[0] for p in parts)
    out = empty((total,) + tuple(parts[0].shape[1:]), parts[0].dtype)
    offset = 0
    for part in parts:
        if part.storage != "buffer":
            part = part.to_buffer()
            try:
                offset = _append(out, part, offset)
            finally:
                part.dispose()
        else:
            offset = _append(out, part, offset)
    return out


def _append(out: Tensor, part: Tensor, offset: int) -> int:
    if part.size:
        dispatch.copy_buffer(out, part, size=part.nbytes, write_offset=offset)
    return offset + part.nbytes


# -------------------------------------------------------------------------------------------------
# Progress bar
# -------------------------------------------------------------------------------------------------
class Progress:
    """Keras-style `3/10 [=====>......] - 0.4s` on stderr, redrawn in place.
    verbose: "auto" (a bar when stderr is a terminal), 0 (silent), 1 (bar), 2 (one final line)."""

    WIDTH = 30

    def __init__(self, steps: int, verbose="auto", stream=None):
        self.stream = stream or sys.stderr
        if verbose == "auto":
            isatty = getattr(self.stream, "isatty", None)
            verbose = 1 if isatty is not None and isatty() else 0
        self.mode = int(verbose) if steps > 1 else 0
        self.steps, self.start = steps, time.perf_counter()

    def update(self, done: int) -> None:
        if self.mode == 1:
            filled = self.WIDTH * done // self.steps
            bar = "=" * max(0, filled - 1) + (">" if done < self.steps else "=") * (filled > 0)
            self.stream.write(f"\r{done}/{self.steps} [{bar:<{self.WIDTH}}] - {self._elapsed()}")
            if done == self.steps:
                self.stream.write("\n")
            self.stream.flush()
        elif self.mode == 2 and done == self.steps:
            self.stream.write(f"{done}/{self.steps} - {self._elapsed()}\n")
            self.stream.flush()

    def _elapsed(self) -> str:
        seconds = time.perf_counter() - self.start
        return f"{seconds:.1f}s" if seconds >= 1 else f"{seconds * 1000:.0f}ms"


def fixed_batch_size(specs, batch_size, count: int, model_name: str):
    """The batch size to run: the model's own when its inputs fix one (stateful RNNs need one),
    which `batch_size` must then agree with and the sample count must be a multiple of."""
    fixed = {s.shape[0] for s in specs if s.shape and s.shape[0] is not None}
    if not fixed:
        return batch_size
    if len(fixed) > 1:
        raise ShapeError(f"Model '{model_name}': its inputs fix different batch sizes {sorted(fixed)}.")
    size = fixed.pop()
    if batch_size is not None and batch_size != size:
        raise ShapeError(f"Model '{model_name}' is built for batches of {size} samples (its inputs "
                         f"have a fixed batch size); received batch_size={batch_size}.")
    if count % size:
        raise ShapeError(f"Model '{model_name}' is built for batches of {size} samples; received "
                         f"{count} samples, which is not a multiple of {size}.")
    return size
