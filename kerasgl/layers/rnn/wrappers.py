"""Layer wrappers: Bidirectional (every merge_mode, return_state, stateful) and TimeDistributed
(around any kerasgl layer)."""
from __future__ import annotations

import copy

from ...tensors import ownership
from ...errors import UnsupportedLayerError
from ...ops import elementwise, merge
from ...saving.spec import LayerSpec
from ...tensors.tensor import view
from ..base import LAYER_CLASSES, Layer, declared_weight_count, register
from .recurrent import Recurrent, flatten_states

MERGE_MODES = ("concat", "sum", "ave", "mul", None)


def inner_layer(wrapper: Layer, value, weights, role: str) -> Layer:
    """The kerasgl layer for a wrapped layer's serialized config ({"class_name", "config"})."""
    if not isinstance(value, dict) or not isinstance(value.get("config"), dict):
        raise UnsupportedLayerError(f"Layer '{wrapper.name}' ({wrapper.class_name}): its {role} "
                                    "has no layer config.")
    class_name = value.get("class_name")
    cls = LAYER_CLASSES.get(class_name)
    if cls is None:
        raise UnsupportedLayerError(f"Layer '{wrapper.name}' ({wrapper.class_name}): the wrapped "
                                    f"layer class {class_name} is not supported.")
    config = value["config"]
    name = config.get("name") or f"{wrapper.name}_{role}"
    return cls(LayerSpec(class_name, name, config, weights=list(weights)), wrapper.keras_major)


def inner_weight_count(config: dict) -> int | None:
    """The weight count of a wrapper config's "layer" (None: not fixed, or no layer config)."""
    inner = config.get("layer")
    if not isinstance(inner, dict) or not isinstance(inner.get("config"), dict):
        return None
    return declared_weight_count(inner.get("class_name"), inner["config"])


@register("Bidirectional")
class Bidirectional(Layer):
    """Keras 3 semantics: the backward layer's sequence is put back in time order (the shader
    writes it so, instead of a flip); with return_sequences, masked steps output zeros (Keras
    forces zero_output_for_mask on both layers)."""
    mask_behaviour = "consumes"

    @classmethod
    def weight_count(cls, config):
        count = inner_weight_count(config)
        return None if count is None else 2 * count          # forward, then backward

    def masked_outputs(self) -> tuple:
        if not self.return_sequences:
            return ()
        return (0, 1) if self.merge_mode is None else (0,)   # merge_mode=None: both sequences

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.merge_mode = self.option("merge_mode", "concat")
        if self.merge_mode not in MERGE_MODES:
            raise self.unsupported(f"merge_mode={self.merge_mode!r}")
        forward_config = self.option("layer")
        backward_config = self.option("backward_layer")
        if not isinstance(backward_config, dict):
            # Keras 2 saves no backward_layer unless it was given: a copy going backwards.
            backward_config = copy.deepcopy(forward_config)
            backward_config["config"]["go_backwards"] = not forward_config["config"].get(
                "go_backwards", False)
            backward_config["config"]["name"] = "backward_" + str(forward_config["config"].get("name"))
        half = len(self.weights_np) // 2
        self.forward = inner_layer(self, forward_config, self.weights_np[:half], "forward_layer")
        self.backward = inner_layer(self, backward_config, self.weights_np[half:], "backward_layer")
        for layer in (self.forward, self.backward):
            if not isinstance(layer, Recurrent):
                layer.dispose()
                raise self.unsupported(f"wrapping a {layer.class_name} (kerasgl's Bidirectional "
                                       "takes SimpleRNN, LSTM, GRU and RNN layers)")
            layer.zero_output_for_mask = layer.return_sequences
        if not self.backward.go_backwards or self.forward.go_backwards:
            raise self.unsupported("a forward layer with go_backwards=True or a backward layer "
                                   "with go_backwards=False")
        self.return_sequences = self.forward.return_sequences
        self.return_state = self.forward.return_state
        self.stateful = self.forward.stateful
        self.shaders = self.forward.shaders

    def compute_output_shape(self, input_shape, *rest):
        forward = self.forward.compute_output_shape(input_shape)
        backward = self.backward.compute_output_shape(input_shape)
        if self.return_state:
            (forward, *f_states), (backward, *b_states) = forward, backward
        if self.merge_mode == "concat":
            output = [tuple(forward[:-1]) + (forward[-1] + backward[-1],)]
        elif self.merge_mode is None:
            output = [tuple(forward), tuple(backward)]
        else:
            output = [tuple(forward)]
        if self.return_state:
            return output + f_states + b_states
        return output[0] if len(output) == 1 else output

    def build(self, input_shape, *rest):
        for layer in (self.forward, self.backward):
            layer.build(input_shape)
        self.built = True

    def call(self, sequences, initial_state=None, mask=None, training=None, **kwargs):
        if isinstance(sequences, (list, tuple)):
            sequences, initial_state = sequences[0], list(sequences[1:]) or initial_state
        states = flatten_states(initial_state)
        half = len(states) // 2

        def compute():
            y, f_states = self.forward.run(sequences, states[:half], mask)
            y_rev, b_states = self.backward.run(sequences, states[half:], mask, time_order=True)
            output = self._merge(y, y_rev)
            if self.return_state:
                return output + f_states + b_states
            return output[0] if len(output) == 1 else output
        return ownership.tidy.run(compute)

    def _merge(self, y, y_rev) -> list:
        """The outputs merged (inside call's tidy scope, which frees y and y_rev once merged)."""
        if self.merge_mode is None:
            return [y, y_rev]
        if self.merge_mode == "concat":
            return [merge.concatenate([y, y_rev], axis=-1)]
        if self.merge_mode == "mul":
            return [elementwise.mul(y, y_rev)]
        total = elementwise.add(y, y_rev)
        return [total] if self.merge_mode == "sum" else [elementwise.mul(total, 0.5)]

    def reset_states(self) -> None:
        self.forward.reset_states()
        self.backward.reset_states()

    @property
    def param_count(self) -> int:
        return self.forward.param_count + self.backward.param_count

    def dispose(self) -> None:
        self.forward.dispose()
        self.backward.dispose()
        super().dispose()


@register("TimeDistributed")
class TimeDistributed(Layer):
    """Applies the wrapped layer to every time step: (batch, time, ...) is folded into
    (batch * time, ...) (a view), the layer runs once, and the result is unfolded. A mask is
    taken (and passed on with the output), not handed to the wrapped layer."""
    mask_behaviour = "consumes"

    @classmethod
    def weight_count(cls, config):
        return inner_weight_count(config)

    def refuses_mask(self, keras_major: int) -> bool:
        """Keras's TimeDistributed hands its layer each step's mask when that layer's call takes
        one (tf.keras: when it uses one); kerasgl's does not."""
        inner = self.layer
        if inner.mask_behaviour != "consumes":
            return False
        if keras_major == 2:
            return not inner.keras2_mask_refused
        return inner.mask_argument != "per_argument"

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.layer = inner_layer(self, self.option("layer"), self.weights_np, "layer")
        self.shaders = self.layer.shaders

    def _inner_shape(self, input_shape):
        if len(input_shape) < 3:
            raise self.shape_error(f"expects inputs of rank >= 3 (batch, time, ...). Received "
                                   f"input shape {tuple(input_shape)}.")
        batch, steps = input_shape[0], input_shape[1]
        folded = None if batch is None or steps is None else batch * steps
        return (folded,) + tuple(input_shape[2:])

    def compute_output_shape(self, input_shape):
        inner = self.layer.compute_output_shape(self._inner_shape(input_shape))
        if not isinstance(inner, tuple) or not all(d is None or isinstance(d, int) for d in inner):
            raise self.unsupported(f"wrapping {self.layer.class_name}, which has several outputs")
        return tuple(input_shape[:2]) + tuple(inner[1:])

    def build(self, input_shape):
        self.layer.build(self._inner_shape(input_shape))
        self.layer.built = True
        self.built = True

    def call(self, inputs, mask=None, training=None, **kwargs):
        batch, steps = inputs.shape[:2]

        def compute():
            out = self.layer.call(view(inputs, (batch * steps,) + tuple(inputs.shape[2:])))
            return view(out, (batch, steps) + tuple(out.shape[1:]))
        return ownership.tidy.run(compute)

    def reset_states(self) -> None:
        if hasattr(self.layer, "reset_states"):
            self.layer.reset_states()

    def dispose(self) -> None:
        self.layer.dispose()
        super().dispose()

