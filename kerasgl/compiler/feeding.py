"""What predict() accepts, checked against the model's inputs, and how it is cut into batches.

Inputs follow keras.Model.predict: one array for a one-input model; a list (in the model's input
order) or a dict (by input name) for several. numpy arrays and kerasgl Tensors are accepted;
anything else goes through np.asarray. Mismatched shapes (ragged nested lists too) raise
ShapeError with the expected and the received shape; data that is not numbers InputTypeError;
numbers an int32 input cannot hold InputValueError. batch_size, verbose and outputs= are checked
here too, each refused with the kerasgl error of its kind.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from ..errors import InputTypeError, InputValueError, ShapeError
from .graph import TensorSpec, format_shape
from . import host_stage
from ..saving.spec import TensorRef
from ..ops import dispatch
from ..tensors import ownership
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


def nan_dropping_layer(graph) -> str | None:
    """The name of the first layer (nested models included) whose GPU kernel would turn a NaN
    or an infinity into a number where Keras keeps NaN (Layer.drops_nan), or None."""
    for name, layer in graph.layers.items():
        inner = getattr(layer, "nested_graph", None)
        found = nan_dropping_layer(inner) if inner is not None else None
        if found is not None:
            return f"{name}/{found}"
        if getattr(layer, "drops_nan", False):
            return name
    return None


def check_input(value, spec: TensorSpec, model_name: str, finite_for: str | None = None):
    """A numpy array of the input's dtype, or the Tensor itself, after checking shape and dtype.
    finite_for: the layer (nan_dropping_layer) for which a float input must hold no NaN or
    infinity: refused rather than answered with numbers where Keras gives NaN. A Tensor input is
    already on the GPU and is not checked (docs/limitations.md)."""
    if isinstance(value, Tensor):
        value._check_alive()
        _check_shape(value.shape, spec, model_name)
        if value.dtype != spec.dtype:
            raise ShapeError(f"Model '{model_name}' input '{spec.name}': expected a {spec.dtype} "
                             f"tensor of shape {format_shape(spec.shape)}, received a "
                             f"{value.dtype} tensor of shape {format_shape(value.shape)}.")
        return value
    if spec.dtype == "string":      # read by host layers on the CPU (compiler/host_stage.py)
        return host_stage.check_strings(value, spec, model_name)
    where = f"Model '{model_name}' input '{spec.name}'"
    if value is None:
        raise InputTypeError(f"{where}: expected numbers ({spec.dtype}) of shape "
                             f"{format_shape(spec.shape)}, received None.")
    try:
        array = np.asarray(value)
    except ValueError as exc:     # nested lists of different lengths
        raise ShapeError(f"{where}: expected shape {format_shape(spec.shape)}, received ragged "
                         f"nested lists (rows of different lengths: {exc}).") from None
    except TypeError as exc:
        raise InputTypeError(f"{where}: expected numbers ({spec.dtype}) of shape "
                             f"{format_shape(spec.shape)}, received {type(value).__name__} "
                             f"({exc}).") from None
    kind = array.dtype.kind
    if kind not in "biuf":
        raise InputTypeError(f"{where}: expected numbers ({spec.dtype}) of shape "
                             f"{format_shape(spec.shape)}, received {array.dtype} data of shape "
                             f"{format_shape(array.shape)}.")
    _check_shape(array.shape, spec, model_name)
    if spec.dtype == "int32" and kind in "iu" and array.size and (
            array.min() < np.iinfo(np.int32).min or array.max() > np.iinfo(np.int32).max):
        # The GPU holds int32: a wider value would wrap silently (2**40 would read as 0).
        raise InputValueError(f"{where} takes int32 values; received {array.dtype} values "
                              f"outside the int32 range, shape {format_shape(array.shape)}.")
    if spec.dtype == "int32" and kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            raise InputValueError(f"{where} takes integers (int32) of shape "
                                  f"{format_shape(spec.shape)}; received {array.dtype} values "
                                  f"that are not whole numbers, shape "
                                  f"{format_shape(array.shape)}.")
    if finite_for is not None and spec.dtype == "float32" and kind == "f":
        finite = np.isfinite(array)
        if not finite.all():
            first = tuple(int(i) for i in np.argwhere(~finite)[0])
            raise InputValueError(
                f"{where} holds {int(finite.size - np.count_nonzero(finite))} NaN or infinite "
                f"value(s), the first at index {first}. Layer '{finite_for}' runs a GPU kernel "
                f"that would turn them into numbers where Keras gives NaN (docs/limitations.md): "
                f"replace them before predict.")
    if spec.dtype == "bool":       # 0 / 1 words; any numbers read as nonzero, as Keras casts
        return np.ascontiguousarray(array != 0, dtype=np.int32)
    return np.ascontiguousarray(array, dtype=np.float32 if spec.dtype == "float32" else np.int32)


def check_batch_size(batch_size, what: str = "batch_size") -> int | None:
    """batch_size as an int (None stays None): a positive integer (numpy's too), not a bool, a
    float or a string, as keras.Model.predict takes it."""
    if batch_size is None:
        return None
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise InputTypeError(f"{what} must be a positive integer. Received {batch_size!r} "
                             f"({type(batch_size).__name__}).")
    if batch_size < 1:
        raise InputValueError(f"{what} must be a positive integer. Received {batch_size!r}.")
    return int(batch_size)


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

    def compute():
        out = empty((total,) + tuple(parts[0].shape[1:]), parts[0].dtype)
        offset = 0
        for part in parts:
            offset = _append(out, part if part.storage == "buffer" else part.to_buffer(), offset)
        return out
    return ownership.tidy.run(compute)


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
        check_verbose(verbose)
        if verbose == "auto":
            # "auto" draws a bar only on a terminal and for several batches; an explicit 1 or 2
            # reports even one batch, as Keras does.
            isatty = getattr(self.stream, "isatty", None)
            verbose = 1 if isatty is not None and isatty() and steps > 1 else 0
        self.mode = int(verbose)
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


def check_verbose(verbose) -> None:
    if isinstance(verbose, bool) or not isinstance(verbose, (str, int, np.integer)) \
            or verbose not in ("auto", 0, 1, 2):
        raise InputValueError(f'verbose must be "auto", 0, 1 or 2. Received {verbose!r}.')


# -------------------------------------------------------------------------------------------------
# predict(outputs=...): which layers' outputs to return
# -------------------------------------------------------------------------------------------------
def wanted_outputs(graph, outputs, model_name: str) -> tuple[list, bool]:
    """(TensorRefs, whether one was asked for alone) for predict's `outputs`: None (the model's
    outputs), a layer name, `(name, node_index[, tensor_index])`, a TensorRef, or a list of
    those. InputTypeError for anything else, InputValueError for a layer or call not there."""
    if outputs is None:
        return list(graph.output_refs), len(graph.output_refs) == 1
    if isinstance(outputs, (str, TensorRef)) or _is_call(outputs):
        return [_output_ref(graph, outputs, model_name)], True
    if not isinstance(outputs, (list, tuple)):
        raise InputTypeError(f"predict(outputs=...) takes a layer name, a (name, node_index) "
                             f"tuple or a list of them; received {type(outputs).__name__} "
                             f"{outputs!r}.")
    return [_output_ref(graph, o, model_name) for o in outputs], False


def _is_call(value) -> bool:
    return (isinstance(value, tuple) and 1 <= len(value) <= 3 and isinstance(value[0], str)
            and all(isinstance(i, (int, np.integer)) and not isinstance(i, bool)
                    for i in value[1:]))


def _output_ref(graph, what, model_name: str) -> TensorRef:
    if isinstance(what, TensorRef):
        return what
    if isinstance(what, str):
        name, node_index, tensor_index = what, None, 0
    elif _is_call(what):
        name = what[0]
        node_index = int(what[1]) if len(what) > 1 else None
        tensor_index = int(what[2]) if len(what) > 2 else 0
    else:
        raise InputTypeError(f"predict(outputs=...): {what!r} is not a layer name nor a "
                             "(name, node_index[, tensor_index]) tuple.")
    if name not in graph.layers:
        raise InputValueError(f"No such layer: {name!r} in model '{model_name}'. Existing layers "
                              f"are: {list(graph.layers)}.")
    nodes = graph.nodes_of(name)
    if node_index is None:
        if len(nodes) > 1:
            raise InputValueError(f"Layer '{name}' is called {len(nodes)} times in model "
                                  f"'{model_name}'; ask for (name, node_index) to choose a call.")
        node_index = 0
    node = next((n for n in nodes if n.index == node_index), None)
    if node is None:
        raise InputValueError(f"Layer '{name}' has no call number {node_index} in model "
                              f"'{model_name}'.")
    if not 0 <= tensor_index < max(1, len(node.output_shapes)):
        raise InputValueError(f"Layer '{name}' has {len(node.output_shapes)} output(s); "
                              f"tensor_index {tensor_index} does not exist.")
    return node.output_ref(tensor_index)


def fixed_batch_size(specs, batch_size, count: int, model_name: str, carries_states: bool):
    """The batch size to run. An input saved with a fixed batch size (`batch_shape: [32, ...]`,
    common in tutorial models) binds only a model with stateful layers, whose carried states have
    that many rows: `batch_size` must then agree with it and the sample count be a multiple of
    it (`carries_states`: has_stateful_layer, found once at load). Any other model takes any
    batch, as Keras 3 predicts it."""
    fixed = {s.shape[0] for s in specs if s.shape and s.shape[0] is not None}
    if not fixed or not carries_states:
        return batch_size
    if len(fixed) > 1:
        raise ShapeError(f"Model '{model_name}': its inputs fix different batch sizes {sorted(fixed)}.")
    size = fixed.pop()
    if batch_size is not None and batch_size != size:
        raise ShapeError(f"Model '{model_name}' is built for batches of {size} samples (its inputs "
                         f"have a fixed batch size and it carries states); received "
                         f"batch_size={batch_size}.")
    if count % size:
        raise ShapeError(f"Model '{model_name}' is built for batches of {size} samples (it carries "
                         f"states); received {count} samples, which is not a multiple of {size}.")
    return size


def has_stateful_layer(graph) -> bool:
    """Whether a layer of the graph (nested models included) carries states between calls."""
    for layer in graph.layers.values():
        inner = getattr(layer, "nested_graph", None)
        if getattr(layer, "stateful", False) or (inner is not None and has_stateful_layer(inner)):
            return True
    return False
