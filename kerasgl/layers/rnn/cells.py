"""keras.layers.SimpleRNNCell / LSTMCell / GRUCell / StackedRNNCells called on their own in a functional graph
(`out, states = cell(x, states)`: one step, its states passed by hand): run as a recurrence of
one time step (layers/rnn/recurrent.py's machinery). Outputs as Keras flattens them: the step's
output, then the new states (h; h and c for an LSTM), cell after cell for StackedRNNCells."""
from __future__ import annotations

from ...ops import layout, typed as typed_ops
from ..base import register
from .recurrent import Recurrent, cell_weight_count, cells_from_rnn_config, flatten_states


@register("SimpleRNNCell", "LSTMCell")
class StandaloneCell(Recurrent):
    """One step of a cell: x (batch, features) and its states -> [output, *new states]. Missing
    states start at zeros; dropout does not act at inference, as in Keras."""
    mask_behaviour = "drops"

    @classmethod
    def weight_count(cls, config: dict) -> int | None:
        return cell_weight_count(config)

    def compute_output_shape(self, input_shape, states=None):
        if len(input_shape) != 2:
            raise self.shape_error(f"a cell takes inputs of rank 2 (batch, features). Received "
                                   f"{tuple(input_shape)}.")
        batch = input_shape[0]
        return [(batch, self.units)] + self.state_shapes(batch)

    def build(self, input_shape, states=None):
        super().build(input_shape)

    def call(self, inputs, states=None, training=None, **kwargs):
        steps = layout.reshape(inputs, (inputs.shape[0], 1, inputs.shape[1]))
        output, new_states = self.run(steps, flatten_states(states), None)
        if any(output is s for s in new_states):
            output = typed_ops.copy(output)
        return [output] + new_states


@register("GRUCell")
class StandaloneGRUCell(StandaloneCell):
    """GRUCell on its own; a Keras 2 file's reset_after default (False) made explicit."""

    @classmethod
    def normalize_keras2_config(cls, config: dict) -> dict:
        config.setdefault("reset_after", False)     # Keras 2 files that predate it meant False
        return config


@register("StackedRNNCells")
class StandaloneStackedCells(StandaloneCell):
    """One step of StackedRNNCells: each cell's output feeds the next; states cell after cell."""

    @classmethod
    def weight_count(cls, config: dict) -> int | None:
        return None            # the cells' own: checked by cells_from_rnn_config

    def make_cells(self, where):
        return cells_from_rnn_config({"class_name": "StackedRNNCells", "config": self.config},
                                     self.weights_np, self.keras_major, where)

