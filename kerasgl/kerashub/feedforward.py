"""The Dense layers of KerasHub's feed-forward blocks, with the activations KerasHub gives them.

KerasHub passes some activations as Python functions its configs cannot name (GPT-2's
`gelu_approximate`, the tanh form of GELU): the architecture module names them here, and the
Dense runs them fused into its matmul, as it does Keras's named activations.
"""
from __future__ import annotations

from ..errors import UnsupportedLayerError
from ..layers import activation_functions
from ..layers.base import Layer
from .hub_layer import HubLayer

# KerasHub's own activation functions (keras_hub/src/utils/keras_utils.py), by the names the
# architecture modules give them.
HUB_ACTIVATIONS = {"gelu_approximate": activation_functions.gelu(approximate=True)}


def dense_part(owner: HubLayer, name: str, units: int, activation: str = "linear",
               bias: bool = True) -> Layer:
    """The owner's next sub-layer: a Dense (kernel, and bias unless bias=False) of `units` with
    `activation` (a Keras activation name, or one of HUB_ACTIVATIONS)."""
    hub = HUB_ACTIVATIONS.get(activation)
    layer = owner.part("Dense", name, {"units": units, "use_bias": bias,
                                       "activation": "linear" if hub else activation},
                       2 if bias else 1)
    if hub is not None and not layer.fuse_activation(hub):
        raise UnsupportedLayerError(f"Layer '{owner.name}': activation {activation!r} could not "
                                    "be fused into its Dense layer.")
    return layer
