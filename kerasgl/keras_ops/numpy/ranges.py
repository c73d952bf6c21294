"""keras.ops that make ranges of values from tensors, recorded in Keras 3 graphs when their
arguments are tensors: linspace, logspace, geomspace (start / stop tensors or numbers, float32)
and vander (a vector's powers). arange, eye, tri and identity never reach a graph: Keras cannot
run them on symbolic tensors, and with numbers it computes them eagerly (a constant).

They run from elementwise ops: `start + k / div * (stop - start)` with the k a small table made on
the host, logspace as base ** that, geomspace as its sign times exp of a linspace of logs, vander
as running products.
"""
from __future__ import annotations

import math

import numpy as np

from ...ops import creation, elementwise, layout, merge
from ...ops.math_unary import math_unary
from ...tensors import ownership
from ...tensors.tensor import Tensor, tensor
from ..node import OpNode, Symbolic, _shape, broadcast_dims, register_op
from .rearranging import ACROSS_BATCH


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@register_op("Linspace", "Logspace", "Geomspace")
class SpaceOp(OpNode):
    params = ("start", "stop")
    input_dtypes = ("float32",)
    shaders = ("binary.comp", "unary.comp", "math_unary.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        options = self.options
        if options.get("dtype") not in (None, "float32"):
            raise self.unsupported(f"dtype={options.get('dtype')!r}")
        if options.get("retstep"):
            raise self.unsupported("retstep=True (a (samples, step) pair)")
        num = options.get("num", 50)
        if not isinstance(num, int) or isinstance(num, bool) or num < 0:
            raise self.unsupported(f"num={num!r}")
        base = options.get("base", 10)
        if self.class_name == "Logspace" and not (_is_number(base) and base > 0):
            raise self.unsupported(f"base={base!r} (a positive number)")

    def operands(self, bound):
        values = [bound.get("start"), bound.get("stop")]
        for value in values:
            if not (_is_number(value) or isinstance(value, (Symbolic, Tensor))):
                raise self.unsupported(f"the operand {value!r} (a tensor or a number)")
        return values

    def axis(self, rank):
        axis = self.options.get("axis", 0)
        if not isinstance(axis, int) or not -(rank + 1) <= axis <= rank:
            raise self.shape_error(f"axis {axis!r} is out of range for a result of rank "
                                   f"{rank + 1}.")
        return axis % (rank + 1)

    def output_shape(self, bound):
        start, stop = self.operands(bound)
        shape = broadcast_dims(_shape(start), _shape(stop), f"Layer '{self.name}'")
        axis = self.axis(len(shape))
        batched = [isinstance(v, Symbolic) and v.shape and v.shape[0] is None
                   for v in (start, stop)]
        if any(batched) and axis == 0:
            raise self.unsupported(ACROSS_BATCH)
        return shape[:axis] + (self.options.get("num", 50),) + shape[axis:]

    def steps(self, num: int, endpoint: bool):
        div = (num - 1) if endpoint else num
        return np.arange(num, dtype=np.float64) / max(div, 1)

    def run(self, bound):
        start, stop = self.operands(bound)
        num, endpoint = self.options.get("num", 50), bool(self.options.get("endpoint", True))
        shape = tuple(np.broadcast_shapes(*[tuple(v.shape) if isinstance(v, Tensor) else ()
                                            for v in (start, stop)]))
        axis = self.axis(len(shape))

        def expanded(value):
            if not isinstance(value, Tensor):
                return value
            full = (1,) * (len(shape) - value.ndim) + tuple(value.shape)
            return layout.reshape(value, full[:axis] + (1,) + full[axis:])

        def compute():
            if self.class_name == "Geomspace":
                sign = (math_unary("sign", start) if isinstance(start, Tensor)
                        else float(np.sign(start)))
                low, high = (elementwise.unary("log", elementwise.mul(v, sign))
                             if isinstance(v, Tensor) or isinstance(sign, Tensor)
                             else math.log(v * sign) for v in (start, stop))
            else:
                sign, low, high = None, start, stop
            steps = tensor(self.steps(num, endpoint).astype(np.float32).reshape(
                (1,) * axis + (num,) + (1,) * (len(shape) - axis)))
            low_e, high_e = expanded(low), expanded(high)
            out = elementwise.add(low_e, elementwise.mul(steps, elementwise.sub(high_e, low_e))
                                  if isinstance(high_e, Tensor) or isinstance(low_e, Tensor)
                                  else elementwise.mul(steps, high_e - low_e))
            if self.class_name == "Logspace":
                out = elementwise.unary("exp", elementwise.mul(
                    out, math.log(float(self.options.get("base", 10)))))
            elif self.class_name == "Geomspace":
                out = elementwise.mul(elementwise.unary("exp", out), expanded(sign))
            full = shape[:axis] + (num,) + shape[axis:]
            if tuple(out.shape) != full:         # numbers only along some axes: broadcast
                out = elementwise.add(out, creation.zeros(full))
            return out
        return ownership.tidy.run(compute)


@register_op("Vander")
class VanderOp(OpNode):
    """vander(x, N, increasing) of a float32 vector: its powers 0 .. N-1 as columns (decreasing
    unless increasing=True), by running products."""
    params = ("x",)
    input_dtypes = ("float32",)
    shaders = ("binary.comp", "concat.comp", "fill.comp")

    def columns(self, shape):
        if len(shape) != 1:
            raise self.shape_error(f"vander takes a vector, not a tensor of shape {list(shape)}.")
        count = self.options.get("N")
        if count is None:
            if shape[0] is None:
                raise self.unsupported("N=None with a vector of unknown size")
            return shape[0]
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise self.unsupported(f"N={count!r}")
        return count

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        return (shape[0], self.columns(shape))

    def run(self, bound):
        x = bound["x"]
        count = self.columns(tuple(x.shape))
        if count == 0:
            return creation.zeros((x.shape[0], count))

        def compute():
            column = layout.reshape(x, (x.shape[0], 1))
            powers = [creation.ones((x.shape[0], 1))]
            for _ in range(count - 1):
                powers.append(elementwise.mul(powers[-1], column))
            if not self.options.get("increasing", False):
                powers.reverse()
            return merge.concatenate(powers, axis=1)
        return ownership.tidy.run(compute)
