"""Elementwise ops: unary maps (activations included) and binary ops with numpy broadcasting."""
from __future__ import annotations

import math

import numpy as np

from ..runtime import buffer_views, tuning
from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch, storage_ops, work
from .storage_ops import any_storage

BINARY_OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "squared_difference")
# shaders/math_extra.glsl's binary functions (keras.ops arctan2, hypot, mod...: jnp's definitions).
MATH_EXTRA_OPS = ("arctan2", "hypot", "logaddexp", "logaddexp2", "fmod", "mod", "floor_divide",
                  "heaviside", "divide_no_nan", "fmax", "fmin", "ldexp", "nextafter")
BINARY_OPS += MATH_EXTRA_OPS
MAX_RANK = 8


def broadcast_shape(a_shape, b_shape) -> tuple[int, ...]:
    """numpy's broadcasting rule, with kerasgl's error when shapes do not fit."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    if a_shape == b_shape or not b_shape:
        return a_shape                 # the common cases, without numpy's general machinery
    if not a_shape:
        return b_shape
    try:
        return tuple(np.broadcast_shapes(tuple(a_shape), tuple(b_shape)))
    except ValueError:
        raise ShapeError(f"Shapes {list(a_shape)} and {list(b_shape)} cannot be broadcast together.")


def broadcast_output(operands, dtype: str, what: str = "Elementwise ops"):
    """The (empty) output of an elementwise op over `operands` (Tensors and numbers) broadcast
    together, and each operand's shape (() for a number)."""
    shapes = [v.shape if isinstance(v, Tensor) else () for v in operands]
    out_shape = ()
    for shape in shapes:
        out_shape = broadcast_shape(out_shape, shape)
    if len(out_shape) > MAX_RANK:
        raise ShapeError(f"{what} support up to rank {MAX_RANK}. Received {list(out_shape)}.")
    return empty(out_shape, dtype), shapes


def broadcast_strides(shape, out_shape) -> list[int]:
    """Element strides of a C-contiguous `shape` seen through `out_shape` (0 where broadcast)."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = 0 if shape[d] == 1 and out_shape[d] != 1 else step
        step *= shape[d]
    return strides


def _pad(values, length=MAX_RANK, fill=1):
    return tuple(values) + (fill,) * (length - len(values))


def _as_operand(value):
    if isinstance(value, Tensor):
        value._check_alive()
        if value.dtype != "float32":
            raise ShapeError(f"Elementwise ops take float32 tensors. Received {value.dtype} "
                             f"tensor of shape {list(value.shape)}.")
        return value
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    raise TypeError(f"Elementwise ops take kerasgl Tensors and Python numbers, not {type(value).__name__}.")


# Both kernels read a and b where they are stored and write c as a texture when a and b are
# (shaders/texture_operand.glsl): no copies for tensors in textures.
_BINARY_TEXTURES = {"reads": {0: "A", 1: "B"}, "writes": {2: "C"}}


@any_storage(in_place=("a", "b"))
def binary(op: str, a, b, activation=None) -> Tensor:
    """c = op(a, b) elementwise; a and b are tensors or numbers, broadcast as numpy does.
    `activation` (an activations.Pointwise, e.g. a ReLU that fusion.py merged into this op) is
    applied to c in the same dispatch: binary.comp's ACT epilogue."""
    if op not in BINARY_OPS:
        raise ValueError(f"Unknown binary op {op!r}; expected one of {BINARY_OPS}.")
    a, b = _as_operand(a), _as_operand(b)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError("binary() needs at least one kerasgl Tensor.")
    a_shape = a.shape if isinstance(a, Tensor) else ()
    b_shape = b.shape if isinstance(b, Tensor) else ()
    out_shape = broadcast_shape(a_shape, b_shape)
    if len(out_shape) > MAX_RANK:
        raise ShapeError(f"Elementwise ops support up to rank {MAX_RANK}. Received {list(out_shape)}.")
    out = empty(out_shape, storage=storage_ops.result_storage(a, b))
    if out.size == 0:
        return out
    a_scalar, b_scalar = not isinstance(a, Tensor), not isinstance(b, Tensor)
    broadcast = (not a_scalar and a_shape != out_shape) or (not b_scalar and b_shape != out_shape)
    if activation is not None and activation.is_identity:
        activation = None
    uniforms = {"n": out.size}
    defines = {"OP": f"binary_{op}", "A_SCALAR": a_scalar, "B_SCALAR": b_scalar,
               "BROADCAST": broadcast}
    if op in MATH_EXTRA_OPS:
        defines["MATH_EXTRA"] = True      # binary.comp includes math_extra.glsl only then
    if activation is not None:
        uniforms.update(activation_uniforms(activation.params))
        defines["ACT"] = activation.function
    if a_scalar:
        uniforms["a_value"] = a
    if b_scalar:
        uniforms["b_value"] = b
    buffers = [None if a_scalar else a, None if b_scalar else b, out]   # a number: a uniform
    kinds = _vec4_operand_kinds(a_shape, a_scalar, b_shape, b_scalar, out_shape)
    if kinds is not None:
        _run_vec4(defines, uniforms, kinds, buffers, out_shape, out.size)
        return out
    if broadcast:
        uniforms.update(rank=len(out_shape), out_shape=_pad(out_shape),
                        a_strides=_pad(broadcast_strides(a_shape, out_shape), fill=0),
                        b_strides=_pad(broadcast_strides(b_shape, out_shape), fill=0))
    storage_ops.run_in_place("binary.comp", **_BINARY_TEXTURES, defines=defines, buffers=buffers,
                             uniforms=uniforms, groups=dispatch.groups_for(out.size),
                             work=(out.size, work.nbytes(a, b, out)))
    return out


def _vec4_operand_kinds(a_shape, a_scalar, b_shape, b_scalar, out_shape):
    """("full" | "scalar" | "channel") for a and b when binary_vec4.comp can do the op, else None.
    It needs 4 | size(out); a per-channel operand ([1, .., 1, C], the squeeze-and-excitation scale
    or a bias) needs 4 | C so that its vec4s line up with the output's."""
    size = math.prod(out_shape)
    if size % 4:
        return None
    kinds = []
    for shape, scalar in ((a_shape, a_scalar), (b_shape, b_scalar)):
        if scalar:
            kinds.append("scalar")
        elif tuple(shape) == tuple(out_shape):
            kinds.append("full")
        elif (len(shape) >= 1 and shape[-1] == out_shape[-1] and shape[-1] % 4 == 0
              and all(d == 1 for d in shape[:-1])):
            kinds.append("channel")
        else:
            return None
    return tuple(kinds)


def _run_vec4(defines, uniforms, kinds, buffers, out_shape, size):
    """Dispatch binary_vec4.comp: the same per-element float ops as binary.comp, 4 per lane;
    buffer operands read through buffer views where the device's tuning prefers them."""
    wanted = tuning.current().elementwise_views
    views = [(unit, buffers[unit]) for unit in (0, 1) if wanted and kinds[unit] != "scalar"
             and buffers[unit].storage == "buffer" and buffer_views.fits(buffers[unit].nbytes)]
    defines = dict(defines, A_CHANNEL=kinds[0] == "channel", B_CHANNEL=kinds[1] == "channel",
                   A_VIEW=any(unit == 0 for unit, _ in views),
                   B_VIEW=any(unit == 1 for unit, _ in views))
    defines.pop("BROADCAST")
    uniforms = dict(uniforms, n4=size // 4)
    del uniforms["n"]
    if "channel" in kinds:
        uniforms["channels4"] = out_shape[-1] // 4
    operands = [t for kind, t in zip(kinds, buffers) if kind != "scalar"]
    storage_ops.run_in_place("binary_vec4.comp", **_BINARY_TEXTURES, defines=defines,
                             buffers=buffers, uniforms=uniforms, views=views,
                             groups=dispatch.groups_for(size // 4),
                             work=(size, work.nbytes(*operands, buffers[2])))


def activation_defines(name: str) -> dict:
    return {"ACT": f"act_{name}"}


def activation_uniforms(params) -> dict:
    return {f"act_p{i}": float(v) for i, v in enumerate(params)}


@any_storage(in_place=("x",))
def unary(name: str, x: Tensor, *params: float) -> Tensor:
    """y = act_<name>(x) elementwise, a function from shaders/activations.glsl; `params` fill its
    uniforms act_p0.. (e.g. the slope of leaky_relu). x in a texture is read there and y written
    to a texture (shaders/texture_operand.glsl)."""
    x = _as_operand(x)
    if not isinstance(x, Tensor):
        raise TypeError("unary() takes a kerasgl Tensor.")
    out = empty(x.shape, storage=storage_ops.result_storage(x))
    if out.size:
        storage_ops.run_in_place("unary.comp", reads={0: "X"}, writes={1: "Y"},
                                 defines=activation_defines(name), buffers=[x, out],
                                 uniforms={"n": out.size, **activation_uniforms(params)},
                                 groups=dispatch.groups_for(out.size),
                                 work=(out.size, work.nbytes(x, out)))
    return out


def add(a, b): return binary("add", a, b)
def sub(a, b): return binary("sub", a, b)
def mul(a, b): return binary("mul", a, b)
def div(a, b): return binary("div", a, b)
def maximum(a, b): return binary("maximum", a, b)
def minimum(a, b): return binary("minimum", a, b)
