"""Ops behind Keras's merging layers: concatenation, n-ary elementwise reductions of a list of
tensors, L2 normalisation and the batched dot product of keras.layers.Dot."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty, view
from . import dispatch, elementwise, layout
from .axes import normalize_axes, reduced_axes, run_over_axes
from .checks import float32_tensor
from .matmul import matmul
from . import storage_ops
from .storage_ops import any_storage

NARY_OPS = {"add": "add", "subtract": "sub", "multiply": "mul", "average": "add",
            "maximum": "maximum", "minimum": "minimum"}


# concat.comp reads each input and writes the output where they are stored, textures included.
@any_storage(in_place=("tensors",))
def concatenate(tensors, axis: int = -1) -> Tensor:
    """Join tensors along `axis`; every other dimension must match."""
    tensors = [float32_tensor(t, f"concatenate input {i}") for i, t in enumerate(tensors)]
    if not tensors:
        raise ShapeError("concatenate needs at least one tensor.")
    rank = tensors[0].ndim
    if rank == 0 or any(t.ndim != rank for t in tensors):
        raise ShapeError(f"concatenate needs tensors of the same rank >= 1. Received shapes "
                         f"{[list(t.shape) for t in tensors]}.")
    (axis,) = normalize_axes(axis, rank)
    first = tensors[0].shape
    for t in tensors:
        if t.shape[:axis] != first[:axis] or t.shape[axis + 1:] != first[axis + 1:]:
            raise ShapeError(f"concatenate along axis {axis} needs all other dimensions to match. "
                             f"Received shapes {[list(t.shape) for t in tensors]}.")
    total = sum(t.shape[axis] for t in tensors)
    out = empty(first[:axis] + (total,) + first[axis + 1:],
                storage=storage_ops.result_storage(*tensors))
    inner = math.prod(first[axis + 1:])
    offset = 0
    for t in tensors:
        if t.size:
            storage_ops.run_in_place(
                "concat.comp", buffers=[t, out], reads={0: "X"}, writes={1: "Y"},
                uniforms={"n": t.size, "slice": t.shape[axis] * inner,
                          "out_slice": total * inner, "offset": offset * inner},
                groups=dispatch.groups_for(t.size))
        offset += t.shape[axis]
    return out


def nary(op: str, tensors, activation=None) -> Tensor:
    """Fold a list of tensors with an elementwise op, left to right, with numpy broadcasting:
    add, subtract (exactly two), multiply, average (sum / n), maximum, minimum. `activation` (an
    activations.Pointwise, e.g. a ReLU that fusion.py merged into this op) is applied in the
    epilogue of the last dispatch: no extra pass over the result."""
    if op not in NARY_OPS:
        raise ValueError(f"Unknown merge op {op!r}; expected one of {tuple(NARY_OPS)}.")
    tensors = [float32_tensor(t, f"{op} input {i}") for i, t in enumerate(tensors)]
    if not tensors or (op == "subtract" and len(tensors) != 2):
        raise ShapeError(f"{op} needs {'exactly 2' if op == 'subtract' else 'at least 1'} tensors. "
                         f"Received {len(tensors)}.")
    if activation is not None and activation.is_identity:
        activation = None

    def compute():
        if len(tensors) == 1:
            result = layout.copy(tensors[0]) if tensors[0].storage == "buffer" else tensors[0].to_buffer()
            if activation is None:
                return result
            return elementwise.unary(activation.function[len("act_"):], result, *activation.params)
        steps = [(NARY_OPS[op], t) for t in tensors[1:]]
        if op == "average":
            steps.append(("div", float(len(tensors))))
        result = tensors[0]
        for i, (binary, operand) in enumerate(steps):
            epilogue = activation if i == len(steps) - 1 else None
            result = elementwise.binary(binary, result, operand, epilogue)
        return result
    return ownership.tidy.run(compute)


@any_storage
def l2_normalize(x: Tensor, axis=-1, epsilon: float = 1e-7) -> Tensor:
    """x * min(rsqrt(sum(x^2, axis)), 1/epsilon), as keras.ops.normalize(x, axis, order=2)."""
    x = float32_tensor(x, "input")
    return run_over_axes("l2_normalize.comp", x, reduced_axes(x, axis, "l2_normalize"),
                         defines={}, buffers=[x], uniforms={"epsilon": float(epsilon)})


def batch_dot_shape(x_shape, y_shape, axes) -> tuple:
    """Output shape of keras's batch_dot (shapes may hold None)."""
    a0, a1 = axes
    out = tuple(x_shape[:a0]) + tuple(x_shape[a0 + 1:]) + tuple(y_shape[1:a1]) + tuple(y_shape[a1 + 1:])
    if len(out) == 1:
        out = out + (1,)
    return out


def batch_dot(x: Tensor, y: Tensor, axes) -> Tensor:
    """keras.layers.Dot's batch_dot: contract x's axis axes[0] with y's axes[1], batch axis 0
    shared. Follows keras/src/layers/merging/dot.py step by step; moving the contracted axis is a
    transpose flag of the matmul (no copy) when it is the other of the last two axes."""
    x, y = float32_tensor(x, "x"), float32_tensor(y, "y")
    if x.ndim < 2 or y.ndim < 2:
        raise ShapeError(f"batch_dot needs inputs of rank >= 2. Received shapes {list(x.shape)} "
                         f"and {list(y.shape)}.")
    if x.shape[0] != y.shape[0]:
        raise ShapeError(f"batch_dot needs equal batch sizes. Received shapes {list(x.shape)} and "
                         f"{list(y.shape)}.")
    a0, a1 = (normalize_axes(a, r)[0] for a, r in zip(axes, (x.ndim, y.ndim)))
    if 0 in (a0, a1):
        raise ShapeError("batch_dot cannot contract the batch axis 0.")
    if x.shape[a0] != y.shape[a1]:
        raise ShapeError(f"batch_dot: x.shape[{a0}] != y.shape[{a1}] ({x.shape[a0]} != "
                         f"{y.shape[a1]}); shapes {list(x.shape)} and {list(y.shape)}.")
    out_shape = batch_dot_shape(x.shape, y.shape, (a0, a1))

    def compute(a0):
        xs, ys = x.shape, y.shape
        if x.ndim == 2:                                  # (B, K) -> (B, 1, K)
            xv = view(x, (xs[0], 1, xs[1]))
            a0 = 2
        else:
            xv = x
        if y.ndim == 2:                                  # (B, K) -> (B, K, 1)
            yv = view(y, (ys[0], ys[1], 1))
        else:
            yv = y
        # x: move a0 last, then fold the middle axes into one: (B, M, K).
        transpose_a = False
        if a0 != xv.ndim - 1:
            if xv.ndim == 3:
                transpose_a = True                       # (B, K, M) read transposed
            else:
                perm = [d for d in range(xv.ndim) if d != a0] + [a0]
                xv = layout.transpose(xv, perm)
        if xv.ndim > 3:
            xv = view(xv, (xv.shape[0], math.prod(xv.shape[1:-1]), xv.shape[-1]))
        # y: move a1 to position 1, then fold the trailing axes into one: (B, K, N).
        transpose_b = False
        if a1 != 1:
            if yv.ndim == 3:
                transpose_b = True                       # (B, N, K) read transposed
            else:
                perm = [0, a1] + [d for d in range(1, yv.ndim) if d != a1]
                yv = layout.transpose(yv, perm)
        if yv.ndim > 3:
            yv = view(yv, (yv.shape[0], yv.shape[1], math.prod(yv.shape[2:])))
        result = matmul(xv, yv, transpose_a=transpose_a, transpose_b=transpose_b)
        return view(result, out_shape)
    return ownership.tidy.run(compute, a0)
