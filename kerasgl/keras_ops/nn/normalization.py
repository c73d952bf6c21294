"""keras.ops.nn (keras/src/ops/nn.py) normalisations as recorded in Keras 3 graphs:
batch_normalization with statistics tensors, layer_normalization, rms_normalization, moments and
normalize, each the arithmetic of Keras's JAX backend in the same order.
"""
from __future__ import annotations

from ...layers.refusals import refuse_ops
from ...ops import elementwise, layout, normalization, reduce
from ...ops.math_unary import math_unary
from ...tensors import ownership
from ..node import OpNode, _shape, broadcast_dims, register_op
from ..numpy.statistics import _axis

EPSILON = 1e-7                    # keras.backend.epsilon()




@register_op("BatchNorm")
class BatchNormOp(OpNode):
    """x * inv + (offset - mean * inv), inv = rsqrt(variance + epsilon) * scale, the statistics
    (1-D, one value per channel of `axis`) reshaped to broadcast along it."""
    params = ("x", "mean", "variance", "offset", "scale")
    input_dtypes = ("float32",)
    shaders = ("binary.comp", "math_unary.comp")

    def stat_shape(self, bound, shape):
        rank = len(shape)
        axis = self.axes_of(self.opt(bound, "axis"), rank)[0]
        for name in ("mean", "variance", "offset", "scale"):
            value = bound.get(name)
            if value is not None and len(getattr(value, "shape", ())) != 1:
                raise self.unsupported(f"a {name} of shape {list(value.shape)} (1-D only)")
        return tuple(-1 if d == axis else 1 for d in range(rank))

    def output_shape(self, bound):
        self.stat_shape(bound, _shape(bound["x"]))
        return _shape(bound["x"])

    def run(self, bound):
        x = bound["x"]
        stat = self.stat_shape(bound, x.shape)
        eps = float(self.opt(bound, "epsilon", 1e-3))

        def shaped(name):
            v = bound.get(name)
            return None if v is None else layout.reshape(v, stat)

        def compute():
            inv = math_unary("rsqrt", elementwise.add(shaped("variance"), eps))
            if shaped("scale") is not None:
                inv = elementwise.mul(inv, shaped("scale"))
            res = elementwise.mul(elementwise.unary("neg", shaped("mean")), inv)
            if shaped("offset") is not None:
                res = elementwise.add(res, shaped("offset"))
            return elementwise.add(elementwise.mul(x, inv), res)
        return ownership.tidy.run(compute)


@register_op("LayerNorm")
class LayerNormOp(OpNode):
    """ops/normalization.layer_norm (gamma / beta: one value per element of the normalised
    axes, in their order; other broadcast shapes are refused at load)."""
    params = ("x", "gamma", "beta")
    input_dtypes = ("float32",)
    shaders = ("layer_norm.comp",)

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        axes = self.axes_of(self.opt(bound, "axis", -1), len(shape))
        want = [shape[a] for a in axes if shape[a] != 1]
        for name in ("gamma", "beta"):
            value = bound.get(name)
            if value is not None and [n for n in _shape(value) if n != 1] != want:
                raise self.unsupported(f"a {name} of shape {list(_shape(value))} (only the "
                                       f"normalised axes' shape {want})")
        return shape

    def run(self, bound):
        eps = self.opt(bound, "epsilon")
        return normalization.layer_norm(bound["x"], bound.get("gamma"), bound.get("beta"),
                                        self.opt(bound, "axis", -1),
                                        EPSILON if eps is None else float(eps),
                                        bool(self.opt(bound, "rms_scaling", False)))


@register_op("RMSNorm")
class RMSNormOp(OpNode):
    """x * rsqrt(mean(x * x) + epsilon) (* scale, broadcast as numpy)."""
    params = ("x", "scale")
    input_dtypes = ("float32",)
    shaders = ("reduce.comp", "binary.comp", "math_unary.comp")

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        self.axes_of(self.opt(bound, "axis", -1), len(shape))
        if bound.get("scale") is not None:
            return broadcast_dims(shape, _shape(bound["scale"]), f"Layer '{self.name}'")
        return shape

    def run(self, bound):
        x, scale, eps = bound["x"], bound.get("scale"), self.opt(bound, "epsilon")
        axes = tuple(self.axes_of(self.opt(bound, "axis", -1), x.ndim))

        def compute():
            ms = reduce.reduce("mean", elementwise.mul(x, x), axes, True)
            out = elementwise.mul(x, math_unary("rsqrt", elementwise.add(
                ms, EPSILON if eps is None else float(eps))))
            return out if scale is None else elementwise.mul(out, scale)
        return ownership.tidy.run(compute)


@register_op("Moments")
class MomentsOp(OpNode):
    """(mean, variance) over `axes`: jnp.mean and jnp.var, as Keras's JAX moments."""
    input_dtypes = ("float32",)
    shaders = ("reduce.comp", "binary.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if self.options.get("synchronized"):
            raise self.unsupported("synchronized=True (Keras's JAX backend refuses it too)")

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        axes = self.axes_of(_axis(self.options.get("axes")), len(shape))
        if self.options.get("keepdims"):
            out = tuple(1 if d in axes else n for d, n in enumerate(shape))
        else:
            out = tuple(n for d, n in enumerate(shape) if d not in axes)
        return [out, out]

    def run(self, bound):
        x, axes = bound["x"], _axis(self.options.get("axes"))
        keepdims = bool(self.options.get("keepdims"))

        def compute():
            mean = reduce.reduce("mean", x, axes, True)
            centred = elementwise.sub(x, mean)
            var = reduce.reduce("mean", elementwise.mul(centred, centred), axes, keepdims)
            if not keepdims:
                mean = layout.reshape(mean, var.shape)
            return [mean, var]
        return ownership.tidy.run(compute)


@register_op("Normalize")
class NormalizeOp(OpNode):
    """keras.ops.nn.normalize: order 2 as x * min(rsqrt(sum(x * x)), 1 / epsilon), other orders
    x / max(sum(|x|**order)**(1 / order), epsilon) over one axis (Keras's formulas)."""
    input_dtypes = ("float32",)
    shaders = ("reduce.comp", "binary.comp", "unary.comp", "math_unary.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        order, axis = self.options.get("order", 2), self.options.get("axis", -1)
        if not isinstance(order, int) or order < 1:
            raise self.unsupported(f"order={order!r}")
        if order != 2 and not isinstance(axis, int):
            raise self.unsupported(f"order={order} over axes {axis!r} (a matrix norm)")

    def run(self, bound):
        x = bound["x"]
        order, axis = self.options.get("order", 2), _axis(self.options.get("axis", -1))
        eps = self.options.get("epsilon")
        eps = 1e-7 if eps is None else float(eps)

        def compute():
            if order == 2:
                inv = math_unary("rsqrt", reduce.reduce("sum", elementwise.mul(x, x), axis, True))
                return elementwise.mul(x, elementwise.minimum(inv, 1.0 / eps))
            magnitude = elementwise.unary("abs", x)
            if order == 1:
                norm = reduce.reduce("sum", magnitude, axis, True)
            else:
                total = reduce.reduce("sum", elementwise.binary("pow", magnitude, float(order)),
                                      axis, True)
                norm = elementwise.binary("pow", total, 1.0 / order)
            return elementwise.div(x, elementwise.maximum(norm, eps))
        return ownership.tidy.run(compute)


refuse_ops({
    "CTCLoss": "its forward recursion over time steps (a log-sum-exp scan per label) is not run "
               "here",
    "CTCDecode": "its output's length depends on the values (greedy / beam search decoding), "
                 "which a GPU plan cannot have",
})
