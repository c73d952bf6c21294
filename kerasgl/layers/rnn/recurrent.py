"""Recurrent layers: SimpleRNN, LSTM, GRU, and RNN over SimpleRNNCell / LSTMCell / GRUCell /
StackedRNNCells (or a list of cells).

Each cell runs as one input-projection matmul plus one recurrence dispatch (ops/rnn.py). Stacked
cells run one after the other over the whole sequence, which gives Keras's step-by-step result:
cell k at step t depends only on cell k-1 at step t and on its own state.

Semantics follow Keras 3 (keras/src/backend/jax/rnn.py): a masked step keeps every state and
repeats the previous output (the current h; zeros before the first kept step when unroll=True,
and in Keras 2 files, whose tf.keras loop starts from a zero output); `zero_output_for_mask`
outputs zeros instead. go_backwards outputs sequences in processing order. `stateful=True` keeps
the final states on the GPU between calls until `reset_states()`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...tensors import ownership
from ...errors import ModelFileError, UnsupportedLayerError
from ...ops import layout, rnn
from ...tensors.tensor import view
from .. import activation_functions, config_values
from ..base import Layer, declare_file_rules, register

_CELL_KINDS = {"SimpleRNN": "simple", "SimpleRNNCell": "simple", "LSTM": "lstm",
               "LSTMCell": "lstm", "GRU": "gru", "GRUCell": "gru"}
_DEFAULT_REC_ACTIVATION = {2: "hard_sigmoid", 3: "sigmoid"}


@dataclass
class Cell:
    """One cell's configuration and weights (numpy until the layer is built)."""
    kind: str                   # as ops/rnn.py names it
    units: int
    activation: tuple           # (GLSL function, params)
    recurrent_activation: tuple
    weights: list
    gpu: dict | None = None

    @property
    def state_count(self) -> int:
        return 2 if self.kind == "lstm" else 1


def _cell_activation(value, keras_major, where) -> tuple:
    """(GLSL function, params) for ops/rnn.py; softmax / log_softmax by name (the recurrence
    normalises over the units of each step, as Keras applies them to a (batch, units) tensor)."""
    fn = activation_functions.pointwise(value, keras_major, where)
    if fn is None:
        return (activation_functions.activation_name(value), ())
    return (fn.function, fn.params)


def make_cell(class_name: str, config: dict, weights: list, keras_major: int, where: str) -> Cell:
    """A Cell from a layer or cell config; `weights` must start with its arrays (the rest is
    ignored: the caller slices by `cell_weight_count`)."""
    kind = _CELL_KINDS[class_name]
    values = config_values.Values(where, config, class_name)
    units = config_values.positive_int(values, "units")
    if kind == "gru" and not config.get("reset_after", keras_major == 3):
        kind = "gru_reset_before"
    activation = _cell_activation(config_values.activation(values, "activation", "tanh"),
                                  keras_major, where)
    recurrent = (_cell_activation(config_values.activation(
                     values, "recurrent_activation", _DEFAULT_REC_ACTIVATION[keras_major]),
                     keras_major, where)
                 if kind != "simple" else ("act_linear", ()))
    count = cell_weight_count(config)
    if len(weights) < count:
        raise ModelFileError(f"{where}: a {class_name} of {units} units needs {count} weight "
                             f"arrays, the file has {len(weights)}.")
    return Cell(kind, units, activation, recurrent, list(weights[:count]))


def cell_weight_count(config: dict) -> int:
    return 3 if config.get("use_bias", True) else 2


def cells_from_rnn_config(cell_value, weights: list, keras_major: int, where: str) -> list[Cell]:
    """The cells of an RNN layer's "cell" config: one cell, StackedRNNCells, or a list."""
    cells, offset = [], 0
    for entry in _cell_entries(cell_value):
        if not isinstance(entry, dict) or entry.get("class_name") not in _CELL_KINDS:
            name = entry.get("class_name") if isinstance(entry, dict) else entry
            raise UnsupportedLayerError(f"{where}: RNN cell {name!r} is not supported (kerasgl runs "
                                        "SimpleRNNCell, LSTMCell, GRUCell and StackedRNNCells).")
        cell = make_cell(entry["class_name"], entry.get("config", {}), weights[offset:],
                         keras_major, where)
        offset += len(cell.weights)
        cells.append(cell)
    if offset != len(weights):
        raise ModelFileError(f"{where}: the cells take {offset} weight arrays, the file has "
                             f"{len(weights)}.")
    return cells


def _cell_entries(cell_value) -> list:
    """The cell configs of an RNN layer's "cell": one cell, StackedRNNCells, or a list."""
    if isinstance(cell_value, list):
        return cell_value
    if isinstance(cell_value, dict) and cell_value.get("class_name") == "StackedRNNCells":
        return cell_value.get("config", {}).get("cells", [])
    return [cell_value]


def _gru_reset_after_default(config: dict) -> dict:
    config.setdefault("reset_after", False)     # Keras 2 files that predate it meant False
    return config


class CellRules:
    """What reading a file needs to know about keras.layers.SimpleRNNCell / LSTMCell / GRUCell,
    which kerasgl runs inside an RNN layer (make_cell), not as layers of their own (base.FILE_RULES):
    their weight count, and GRUCell's Keras 2 spelling wherever a cell config appears."""

    @classmethod
    def weight_count(cls, config: dict) -> int:
        return cell_weight_count(config)

    @classmethod
    def normalize_keras2_config(cls, config: dict) -> dict:
        return config

    @classmethod
    def inference_weights(cls, config: dict, weights: list) -> list:
        return weights


class GRUCellRules(CellRules):
    @classmethod
    def normalize_keras2_config(cls, config: dict) -> dict:
        return _gru_reset_after_default(config)


declare_file_rules(("SimpleRNNCell", "LSTMCell"), CellRules)
declare_file_rules(("GRUCell",), GRUCellRules)


def flatten_states(value) -> list:
    """The tensors of an initial_state argument (None, a tensor, or nested lists of them)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in flatten_states(item)]
    return [value]


class Recurrent(Layer):
    """The RNN layer's machinery, shared by SimpleRNN, LSTM, GRU and RNN."""
    shaders = ("matmul.comp", "rnn_recurrence.comp")
    # A masked step keeps the states and repeats the output (see the module docstring); the
    # sequence output carries the mask on.
    mask_behaviour = "consumes"

    def masked_outputs(self) -> tuple:
        return (0,) if self.return_sequences else ()

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        where = f"Layer '{self.name}' ({self.class_name})"
        self.cells = self.make_cells(where)
        flag = config_values.flag
        self.return_sequences = flag(self, "return_sequences", False)
        self.return_state = flag(self, "return_state", False)
        self.go_backwards = flag(self, "go_backwards", False, passed_to_backend=True)
        self.stateful = flag(self, "stateful", False)
        self.unroll = flag(self, "unroll", False)
        if keras_major >= 3 and "time_major" in self.config:
            # Keras 3 has no time_major (its layers refuse the keyword): a damaged or edited file.
            raise config_values.error(self, "time_major", self.config["time_major"],
                                      "no such key in a Keras 3 file (Keras 3 refuses it)")
        self.time_major = flag(self, "time_major", False)
        # Bidirectional sets this to return_sequences on its inner layers, as Keras does.
        self.zero_output_for_mask = flag(self, "zero_output_for_mask", False)
        if self.stateful and self.time_major:
            raise self.unsupported("stateful=True with time_major=True")
        self._states: list | None = None      # stateful: the carried states (kept tensors)

    def make_cells(self, where) -> list[Cell]:
        return [make_cell(self.class_name, self.config, self.weights_np, self.keras_major, where)]

    # -- shapes ------------------------------------------------------------------------------------
    @property
    def units(self) -> int:
        return self.cells[-1].units

    def state_shapes(self, batch) -> list[tuple]:
        return [(batch, cell.units) for cell in self.cells for _ in range(cell.state_count)]

    def compute_output_shape(self, input_shape, *rest):
        if input_shape and not isinstance(input_shape[0], (int, type(None))):
            input_shape = input_shape[0]       # Keras 2: [sequences, *initial_states]
        if len(input_shape) != 3:
            raise self.shape_error(f"expects inputs of rank 3 (batch, time, features). Received "
                                   f"input shape {tuple(input_shape)}.")
        if self.time_major:
            steps, batch = input_shape[0], input_shape[1]
        else:
            batch, steps = input_shape[0], input_shape[1]
        features = self.cells[0].weights[0].shape[0]
        if input_shape[2] is not None and input_shape[2] != features:
            raise self.shape_error(f"expects the last input dimension to be {features}. Received "
                                   f"input shape {tuple(input_shape)}.")
        if self.return_sequences:
            output = (steps, batch, self.units) if self.time_major else (batch, steps, self.units)
        else:
            output = (batch, self.units)
        if self.return_state:
            return [output] + self.state_shapes(batch)
        return output

    def build(self, input_shape, *rest):
        for cell in self.cells:
            packed = rnn.pack_cell(cell.kind, cell.units, *cell.weights)
            cell.gpu = rnn.upload_cell(packed, self.upload)
        self.built = True

    # -- running -----------------------------------------------------------------------------------
    def call(self, sequences, initial_state=None, mask=None, training=None, **kwargs):
        if isinstance(sequences, (list, tuple)):
            sequences, initial_state = sequences[0], list(sequences[1:]) or initial_state

        def compute():
            output, states = self.run(sequences, flatten_states(initial_state), mask)
            return [output] + states if self.return_state else output
        return ownership.tidy.run(compute)

    def run(self, sequences, states_in, mask, time_order=False):
        """(output, [final states]) as new tensors. time_order: sequences in input time order
        even for go_backwards (Bidirectional's backward layer, instead of Keras's flip)."""
        if states_in and len(states_in) != len(self.state_shapes(None)):
            raise self.shape_error(f"expects {len(self.state_shapes(None))} initial state(s). "
                                   f"Received {len(states_in)}.")
        batch = sequences.shape[1 if self.time_major else 0]
        if not states_in and self.stateful and self._states is not None:
            if self._states[0].shape[0] != batch:
                raise self.shape_error(
                    f"is stateful with batch size {self._states[0].shape[0]}; received a batch "
                    f"of {batch}. Reset its states (model.reset_states()) to change the batch "
                    "size.")
            states_in = self._states
        if self.time_major and mask is not None:
            raise self.unsupported("a mask with time_major=True")

        def compute():
            x = layout.transpose(sequences, (1, 0, 2)) if self.time_major else sequences
            output, states = self.run_cells(x, states_in, mask, time_order)
            if self.time_major and self.return_sequences:
                output = layout.transpose(output, (1, 0, 2))
            if self.stateful:
                self._keep_states(states)
            return output, states
        return ownership.tidy.run(compute)

    def run_cells(self, x, states_in, mask, time_order_last=False):
        """Run the cells in turn; returns (output, [final states...]). Inside run's tidy scope,
        which frees the sequences passed between cells."""
        states_out, offset, current = [], 0, x
        for index, cell in enumerate(self.cells):
            last = index == len(self.cells) - 1
            h0 = states_in[offset] if states_in else None
            c0 = states_in[offset + 1] if states_in and cell.kind == "lstm" else None
            offset += cell.state_count
            zero_start = self.unroll or self.keras_major == 2
            current, h, c = rnn.recurrence(
                current, cell.kind, cell.units, cell.gpu["kernel"], cell.gpu["recurrent_kernel"],
                cell.gpu["input_bias"], cell.gpu["recurrent_bias"], cell.activation,
                cell.recurrent_activation, initial_h=h0, initial_c=c0, mask=mask,
                go_backwards=self.go_backwards,
                return_sequences=self.return_sequences or not last,
                zero_masked_output=last and self.zero_output_for_mask,
                zero_until_unmasked=zero_start and mask is not None,
                time_order=(not last) or time_order_last)
            states_out += [h] + ([c] if c is not None else [])
        return current, states_out

    # -- state -------------------------------------------------------------------------------------
    def _keep_states(self, states) -> None:
        old = self._states or []
        self._states = [ownership.keep(view(s, s.shape)) for s in states]
        ownership.dispose(old)

    def reset_states(self) -> None:
        """Forget the carried states of a stateful layer (the next call starts from zeros)."""
        ownership.dispose(self._states or [])
        self._states = None

    def dispose(self) -> None:
        self.reset_states()
        super().dispose()


@register("SimpleRNN", "LSTM")
class RecurrentLayer(Recurrent):
    """SimpleRNN, LSTM and GRU: the cell's options are the layer's own config."""

    @classmethod
    def weight_count(cls, config):
        return 2 + bool(config.get("use_bias", True))    # kernel, recurrent kernel (+ bias)


@register("GRU")
class GRU(RecurrentLayer):
    @classmethod
    def normalize_keras2_config(cls, config):
        return _gru_reset_after_default(config)


@register("RNN")
class RNN(Recurrent):
    """keras.layers.RNN over SimpleRNNCell, LSTMCell, GRUCell, StackedRNNCells or a list of them."""

    def make_cells(self, where) -> list[Cell]:
        return cells_from_rnn_config(self.option("cell"), self.weights_np, self.keras_major, where)


# -- CuDNNLSTM / CuDNNGRU (Keras 2.0-2.3, trained on NVIDIA GPUs) ---------------------------------
def _per_gate(kernel, transform, gates: int):
    return np.hstack([transform(k) for k in np.hsplit(np.asarray(kernel, np.float32), gates)])


def from_cudnn_weights(weights: list, gates: int) -> list:
    """Keras 2's own conversion of CuDNN weights for its LSTM / GRU layers (tf-keras
    hdf5_format `_convert_rnn_weights`, from_cudnn=True): each gate's input kernel transposed and
    reshaped in Fortran order, each gate's recurrent kernel transposed; an LSTM's two biases
    summed, a GRU's split into the input and the recurrent row of reset_after=True."""
    kernel = _per_gate(weights[0], lambda k: k.T.reshape(k.shape, order="F"), gates)
    recurrent = _per_gate(weights[1], lambda k: k.T, gates)
    bias = np.asarray(weights[2], np.float32)
    bias = bias.reshape(2, -1).sum(axis=0) if gates == 4 else bias.reshape(2, -1)
    return [kernel, recurrent, bias]


@register("CuDNNLSTM", "CuDNNGRU")
class CuDNNRecurrent(RecurrentLayer):
    """A CuDNN layer runs as the LSTM / GRU(reset_after=True) Keras 2 converts it to: tanh
    activation, sigmoid recurrent activation, the weights converted as Keras 2 loads them."""

    @classmethod
    def weight_count(cls, config):
        return 3

    def make_cells(self, where) -> list[Cell]:
        lstm = self.class_name == "CuDNNLSTM"
        gates = 4 if lstm else 3
        units = config_values.positive_int(self, "units")
        shapes = [tuple(np.shape(w)) for w in self.weights_np]
        if len(shapes) != 3 or shapes[1] != (units, gates * units) \
                or len(shapes[0]) != 2 or shapes[0][1] != gates * units \
                or shapes[2] != (2 * gates * units,):
            raise ModelFileError(f"{where}: a {self.class_name} of {units} units stores a kernel "
                                 f"(features, {gates * units}), a recurrent kernel ({units}, "
                                 f"{gates * units}) and a bias ({2 * gates * units},); the file "
                                 f"has {shapes}.")
        config = {"units": units, "activation": "tanh", "recurrent_activation": "sigmoid",
                  "use_bias": True, "reset_after": True}
        return [make_cell("LSTM" if lstm else "GRU", config,
                          from_cudnn_weights(self.weights_np, gates), self.keras_major, where)]
