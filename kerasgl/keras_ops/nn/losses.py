"""keras.ops.nn (keras/src/ops/nn.py) losses and metrics as recorded in Keras 3 graphs: binary,
categorical and sparse categorical cross-entropy (from logits or probabilities, clipped to
Keras's epsilon) and PSNR, each the arithmetic of Keras's JAX backend in the same order.
"""
from __future__ import annotations

import math

from ...ops import elementwise, layout, reduce, softmax
from ...ops.arg_ops import one_hot
from ...tensors import ownership
from ..node import OpNode, _shape, register_op
from .normalization import EPSILON


# -------------------------------------------------------------------------------------------------
# Losses
# -------------------------------------------------------------------------------------------------
def _log_clipped(p):
    return elementwise.unary("log", elementwise.minimum(elementwise.maximum(p, EPSILON),
                                                        1.0 - EPSILON))


@register_op("BinaryCrossentropy")
class BinaryCrossentropyOp(OpNode):
    params = ("target", "output")
    input_dtypes = ("float32",)
    shaders = ("binary.comp", "unary.comp")

    def output_shape(self, bound):
        t, o = _shape(bound["target"]), _shape(bound["output"])
        if len(t) != len(o) or any(None not in (a, b) and a != b for a, b in zip(t, o)):
            raise self.shape_error(f"target {list(t)} and output {list(o)} differ in shape.")
        return o

    def run(self, bound):
        t, o = bound["target"], bound["output"]

        def compute():
            if self.opt(bound, "from_logits", False):
                # log_sigmoid(x) = -softplus(-x), as jax.nn.log_sigmoid
                log_p = elementwise.unary("neg", elementwise.unary(
                    "softplus", elementwise.unary("neg", o)))
                log_q = elementwise.unary("neg", elementwise.unary("softplus", o))
                first = elementwise.mul(elementwise.mul(-1.0, t), log_p)
                return elementwise.sub(first, elementwise.mul(elementwise.sub(1.0, t), log_q))
            clipped = elementwise.minimum(elementwise.maximum(o, EPSILON), 1.0 - EPSILON)
            bce = elementwise.add(elementwise.mul(t, elementwise.unary("log", clipped)),
                                  elementwise.mul(elementwise.sub(1.0, t), elementwise.unary(
                                      "log", elementwise.sub(1.0, clipped))))
            return elementwise.unary("neg", bce)
        return ownership.tidy.run(compute)


def _log_prob(o, axis, from_logits):
    if from_logits:
        return softmax.log_softmax(o, axis)
    return _log_clipped(elementwise.div(o, reduce.reduce("sum", o, axis, True)))


@register_op("CategoricalCrossentropy", "SparseCategoricalCrossentropy")
class CategoricalCrossentropyOp(OpNode):
    """-sum(target * log p) over `axis`; the sparse one's int32 targets one-hot encoded (a
    trailing axis of 1 squeezed, as Keras does; only axis -1)."""
    params = ("target", "output")
    shaders = ("binary.comp", "reduce.comp", "softmax.comp", "unary.comp", "one_hot.comp")

    @property
    def sparse(self):
        return self.class_name.startswith("Sparse")

    def output_shape(self, bound):
        t, o = _shape(bound["target"]), _shape(bound["output"])
        want = "int32" if self.sparse else "float32"
        if getattr(t, "dtype", "float32") != want or getattr(o, "dtype", "float32") != "float32":
            raise self.unsupported(f"a {getattr(t, 'dtype', 'float32')} target "
                                   f"(this operation takes {want} targets and float32 outputs)")
        axis = self.axes_of(self.opt(bound, "axis", -1), len(o))[0]
        if self.sparse:
            if axis != len(o) - 1:
                raise self.unsupported(f"axis={self.opt(bound, 'axis')!r} (only the last axis)")
            t = t[:-1] if len(t) == len(o) and t[-1] == 1 else t
            if len(t) != len(o) - 1:
                raise self.shape_error(f"target {list(t)} does not fit output {list(o)}.")
        elif len(t) != len(o):
            raise self.shape_error(f"target {list(t)} and output {list(o)} differ in shape.")
        return tuple(n for d, n in enumerate(o) if d != axis)

    def run(self, bound):
        t, o = bound["target"], bound["output"]
        axis = self.axes_of(self.opt(bound, "axis", -1), o.ndim)[0]

        def compute():
            target = t
            if self.sparse:
                if t.ndim == o.ndim:
                    target = layout.reshape(t, t.shape[:-1])
                target = one_hot(target, o.shape[-1])
            log_p = _log_prob(o, axis, bool(self.opt(bound, "from_logits", False)))
            return elementwise.unary("neg", reduce.reduce("sum", elementwise.mul(target, log_p),
                                                          axis, False))
        return ownership.tidy.run(compute)


@register_op("PSNR")
class PSNROp(OpNode):
    """20 log10(max_val) - 10 log10(mean((x1 - x2)^2)) over every element (the batch too)."""
    params = ("x1", "x2", "max_val")
    input_dtypes = ("float32",)
    shaders = ("binary.comp", "reduce.comp", "unary.comp")

    def output_shape(self, bound):
        return ()

    def run(self, bound):
        a, b = bound["x1"], bound["x2"]
        peak = 20.0 * math.log10(float(self.opt(bound, "max_val")))

        def compute():
            d = elementwise.sub(a, b)
            mse = reduce.reduce("mean", elementwise.mul(d, d), None, False)
            log10 = elementwise.mul(elementwise.unary("log", mse), 1.0 / math.log(10.0))
            return elementwise.sub(peak, elementwise.mul(log10, 10.0))
        return ownership.tidy.run(compute)
