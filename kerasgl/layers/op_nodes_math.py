"""keras.ops maths recorded in Keras 3 graphs beyond op_nodes.py's: elementwise functions that are
not activations (floor, erf, log1p...) and the statistics built from reductions (var, std,
logsumexp, norm) and running sums / products (cumsum, cumprod). All take and return float32.
"""
from __future__ import annotations

import math

from ..ops import elementwise, layout, reduce
from ..ops.math_unary import cumulative, math_unary
from ..tensors import ownership
from .op_nodes import OpNode, ReduceOp, _shape, register_op

# Operation class -> function of shaders/math_unary.comp (without the math_ prefix).
_MATH = {"Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign",
         "Reciprocal": "reciprocal", "Rsqrt": "rsqrt", "Erf": "erf", "Expm1": "expm1",
         "Log1p": "log1p"}


@register_op(*_MATH)
class MathUnaryOp(OpNode):
    params = ("x", "decimals")
    shaders = ("math_unary.comp",)
    input_dtypes = ("float32",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.check(self.options)           # the config's options: refused with the other layers

    def check(self, bound):
        # round(x, decimals) scales by 10**decimals in Keras: only the plain rounding runs here.
        if self.class_name == "Round" and self.opt(bound, "decimals", 0) not in (0, None):
            raise self.unsupported(f"decimals={self.opt(bound, 'decimals')!r}")
        if self.class_name != "Round" and "decimals" in bound:
            raise self.shape_error("takes one argument.")

    def output_shape(self, bound):
        self.check(bound)
        return super().output_shape(bound)

    def run(self, bound):
        return math_unary(_MATH[self.class_name], bound["x"])


def _keepdims_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


@register_op("Var", "Std")
class VarianceOp(ReduceOp):
    """mean((x - mean(x))**2) over the axes (the population variance, as jnp.var), std its root."""
    shaders = ("reduce.comp", "binary.comp", "unary.comp")

    def run(self, bound):
        x, axis = bound["x"], _keepdims_axis(self.opt(bound, "axis"))
        keepdims = bool(self.opt(bound, "keepdims", False))

        def compute():
            centred = elementwise.sub(x, reduce.reduce("mean", x, axis, True))
            var = reduce.reduce("mean", elementwise.mul(centred, centred), axis, keepdims)
            return elementwise.unary("sqrt", var) if self.class_name == "Std" else var
        return ownership.tidy.run(compute)


@register_op("Logsumexp")
class LogSumExpOp(ReduceOp):
    """log(sum(exp(x))) shifted by the maximum (as jax.scipy.special.logsumexp) so that large
    inputs do not overflow."""
    shaders = ("reduce.comp", "binary.comp", "unary.comp")

    def run(self, bound):
        x, axis = bound["x"], _keepdims_axis(self.opt(bound, "axis"))
        keepdims = bool(self.opt(bound, "keepdims", False))

        def compute():
            peak = reduce.reduce("max", x, axis, True)
            total = reduce.reduce("sum", elementwise.unary("exp", elementwise.sub(x, peak)), axis, True)
            out = elementwise.add(elementwise.unary("log", total), peak)
            if not keepdims:
                out = reduce.reduce("sum", out, axis, False)     # drops the size-1 axes
            return out
        return ownership.tidy.run(compute)


@register_op("Norm")
class NormOp(ReduceOp):
    """The Frobenius norm (ord None or "fro") over two axes: sqrt(sum(x * x)). Other orders and
    vector norms are refused at load: Keras 3's own graph of them does not run (its Norm op hands
    jax an unhashable axis list), so there is no reference to match."""
    params = ("x", "ord", "axis", "keepdims")
    shaders = ("reduce.comp", "binary.comp", "unary.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.check({})                     # the config's options: refused with the other layers

    def output_shape(self, bound):
        self.check(bound)
        return super().output_shape(bound)

    def check(self, bound):
        order, axis = self.opt(bound, "ord"), self.opt(bound, "axis")
        if order not in (None, "fro") or not isinstance(axis, list) or len(axis) != 2:
            raise self.unsupported(f"ord={order!r} with axis={axis!r} (only the Frobenius norm "
                                   "over two axes)")

    def run(self, bound):
        x, axis = bound["x"], _keepdims_axis(self.opt(bound, "axis"))
        keepdims = bool(self.opt(bound, "keepdims", False))

        def compute():
            return elementwise.unary("sqrt", reduce.reduce("sum", elementwise.mul(x, x), axis, keepdims))
        return ownership.tidy.run(compute)


@register_op("Cumsum", "Cumprod")
class CumulativeOp(OpNode):
    """Running sums / products along an axis (axis None: of the flattened input), float32."""
    params = ("x", "axis", "dtype")
    shaders = ("cumulative.comp",)
    input_dtypes = ("float32",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        dtype = (self.config or {}).get("dtype")
        if dtype not in (None, "float32"):
            raise self.unsupported(f"dtype={dtype!r}")

    def output_shape(self, bound):
        shape, axis = _shape(bound["x"]), self.opt(bound, "axis")
        if bound.get("dtype") not in (None, "float32"):
            raise self.unsupported(f"dtype={bound.get('dtype')!r}")
        if axis is None:
            return (None if None in shape else math.prod(shape),)
        if not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
            raise self.shape_error(f"axis {axis!r} is out of range for rank {len(shape)}.")
        return shape

    def run(self, bound):
        x, axis = bound["x"], self.opt(bound, "axis")
        product = self.class_name == "Cumprod"
        if axis is not None:
            return cumulative(x, axis, product)
        flat = layout.reshape(x, (x.size,))
        try:
            return cumulative(flat, 0, product)
        finally:
            flat.dispose()
