"""Keras activation names -> the pointwise functions of shaders/activations.glsl.

One place decides what each Keras activation computes, including the formulas that changed between
Keras 2 and Keras 3 (hard_sigmoid). Fused kernels (dense, conv, ...) use `pointwise()` to fold an
activation into their epilogue; softmax and log_softmax are not pointwise and run as their own op.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnsupportedLayerError
from ..ops import elementwise, softmax
from ..tensors.tensor import view

# Keras name -> (GLSL function in activations.glsl, parameters act_p0..)
_POINTWISE = {
    "linear": ("act_linear", ()),
    None: ("act_linear", ()),
    "relu": ("act_relu", ()),
    "relu6": ("act_relu6", ()),
    "leaky_relu": ("act_leaky_relu", (0.2,)),     # keras.activations.leaky_relu default slope
    "elu": ("act_elu", (1.0,)),
    "selu": ("act_selu", ()),
    "gelu": ("act_gelu", ()),                     # Keras 3 default: approximate=False
    "sigmoid": ("act_sigmoid", ()),
    "tanh": ("act_tanh", ()),
    "hard_silu": ("act_hard_silu", ()),
    "hard_swish": ("act_hard_silu", ()),
    "silu": ("act_silu", ()),
    "swish": ("act_silu", ()),
    "softplus": ("act_softplus", ()),
    "softsign": ("act_softsign", ()),
    "exponential": ("act_exponential", ()),
    "mish": ("act_mish", ()),
    # Keras 3 additions (keras.activations.*), with their Keras default parameters.
    "celu": ("act_celu", (1.0,)),
    "squareplus": ("act_squareplus", (4.0,)),
    "soft_shrink": ("act_soft_shrink", (0.5,)),
    "hard_shrink": ("act_hard_shrink", (0.5,)),
    "sparse_plus": ("act_sparse_plus", ()),
    "sparse_sigmoid": ("act_sparse_sigmoid", ()),
    "tanh_shrink": ("act_tanh_shrink", ()),
    "hard_tanh": ("act_hard_tanh", ()),
    "log_sigmoid": ("act_log_sigmoid", ()),
}
NON_POINTWISE = ("softmax", "log_softmax")
# Keras activations that are neither pointwise nor softmax: refused by name, not as unknown.
NOT_SUPPORTED = ("glu", "sparsemax", "threshold")


@dataclass(frozen=True)
class Pointwise:
    """A pointwise activation: the GLSL function name and its parameters."""
    function: str
    params: tuple = ()

    @property
    def is_identity(self) -> bool:
        return self.function == "act_linear"


def activation_name(value) -> str | None:
    """The Keras activation name from a config value: a string, None, or a serialized dict."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        config = value.get("config")
        if isinstance(config, str):
            return config
        if isinstance(config, dict) and "name" in config:
            return config["name"]
        return value.get("class_name")
    return str(value)


def gelu(approximate: bool) -> Pointwise:
    """keras.activations.gelu serialises as plain "gelu" (approximate=False, the erf form, in
    Keras 2 and 3); the tanh form (approximate=True) is reachable through keras.ops.gelu nodes,
    whose default it is."""
    return Pointwise("act_gelu_tanh" if approximate else "act_gelu")


def pointwise(value, keras_major: int, where: str = "") -> Pointwise | None:
    """The pointwise activation for a config value, or None for softmax / log_softmax.
    Raises UnsupportedLayerError for an activation kerasgl does not know."""
    name = activation_name(value)
    if name in NOT_SUPPORTED:
        raise UnsupportedLayerError(
            f"{where + ': ' if where else ''}activation {name!r} is not supported (it is not a "
            "pointwise function kerasgl can fuse, or needs arguments a saved model does not keep).")
    if name == "hard_sigmoid":
        # Keras 2 computed clip(0.2 x + 0.5, 0, 1); Keras 3 computes relu6(x + 3) / 6.
        return Pointwise("act_hard_sigmoid_k2" if keras_major == 2 else "act_hard_sigmoid")
    if name in _POINTWISE:
        function, params = _POINTWISE[name]
        return Pointwise(function, params)
    if name in NON_POINTWISE:
        return None
    raise UnsupportedLayerError(f"{where + ': ' if where else ''}activation {name!r} is not supported.")


def apply(x, value, keras_major: int, where: str = "", axis=-1):
    """A new tensor: the activation `value` (a config value) applied to x. softmax and log_softmax
    run over `axis`; the identity returns a view (no copy, no dispatch). x is not disposed."""
    name = activation_name(value)
    fn = pointwise(value, keras_major, where)
    if fn is None:
        return (softmax.log_softmax if name == "log_softmax" else softmax.softmax)(x, axis)
    if fn.is_identity:
        return view(x, x.shape)
    return elementwise.unary(fn.function[len("act_"):], x, *fn.params)
