"""tf.nn activations (relu, relu6, elu, selu, softplus, softsign, leaky_relu, gelu, silu / swish,
crelu), softmax / log_softmax and l2_normalize, with TensorFlow's defaults (leaky_relu's alpha
0.2, gelu's exact erf form, l2_normalize's epsilon 1e-12).
"""
from __future__ import annotations

from ...ops import elementwise, math_unary, reduce, softmax
from ...ops.word_gather import side_by_side
from ...tensors.tensor import view
from .elementwise import Unary
from .functions import TFFunction, register
from .reductions import checked_axes


class Activation(Unary):
    """An activation of activations.glsl over `features`; `option` (with its TensorFlow default)
    fills its parameter (leaky_relu's alpha)."""
    params = ("features", "alpha")

    def run(self, args):
        x = args.tensor("features")
        params = self.fixed.get("params", ())
        if "option" in self.fixed:
            name, default = self.fixed["option"]
            params = (float(args.get(name, default)),)
        return elementwise.unary(self.fixed["fn"], x, *params)


register(Activation, {
    "nn.relu": {"fn": "relu"}, "nn.relu6": {"fn": "relu6"}, "nn.elu": {"fn": "elu", "params": (1.0,)},
    "nn.selu": {"fn": "selu"}, "math.softplus": {"fn": "softplus"}, "nn.softplus": {"fn": "softplus"},
    "nn.softsign": {"fn": "softsign"},
    "nn.leaky_relu": {"fn": "leaky_relu", "option": ("alpha", 0.2)},
})


class Gelu(Unary):
    """tf.nn.gelu: 0.5 x (1 + erf(x / sqrt 2)), or its tanh approximation."""
    params = ("features", "approximate")

    def run(self, args):
        fn = "gelu_tanh" if args.get("approximate", False) else "gelu"
        return elementwise.unary(fn, args.tensor("features"))


register(Gelu, {"nn.gelu": {"fn": "gelu"}})


class Silu(Unary):
    """tf.nn.silu / swish: x * sigmoid(beta * x)."""
    params = ("features", "beta")
    shaders = ("unary.comp", "binary.comp")

    def run(self, args):
        x, beta = args.tensor("features"), float(args.get("beta", 1.0))
        if beta == 1.0:
            return elementwise.unary("silu", x)
        return elementwise.mul(x, elementwise.unary("sigmoid", elementwise.mul(x, beta)))


register(Silu, {"nn.silu": {"fn": "silu"}, "nn.swish": {"fn": "silu"}})


class Crelu(TFFunction):
    """tf.nn.crelu: relu(x) and relu(-x) joined along `axis`."""
    params = ("features", "name", "axis")
    shaders = ("unary.comp", "word_gather.comp")

    def plan(self, args):
        x = args.tensor("features")
        if x.dtype != "float32":
            raise self.unsupported(f"a {x.dtype} tensor")
        (self.axis,) = checked_axes(self, x, args.get("axis", -1), one=True)
        size = x.shape[self.axis]
        return x.shape[:self.axis] + (None if size is None else 2 * size,) + x.shape[self.axis + 1:]

    def run(self, args):
        x = args.tensor("features")
        parts = [elementwise.unary("relu", x), elementwise.unary("relu", elementwise.unary("neg", x))]
        rows = 1
        for d in x.shape[:self.axis]:
            rows *= d
        joined = side_by_side(parts, rows)
        shape = x.shape[:self.axis] + (2 * x.shape[self.axis],) + x.shape[self.axis + 1:]
        return view(joined, shape)


register(Crelu, ["nn.crelu"])


class Softmax(TFFunction):
    """tf.nn.softmax / log_softmax (fixed `log`) over `axis` (the last by default)."""
    params = ("logits", "axis", "name")
    aliases = {"dim": "axis"}
    shaders = ("softmax.comp",)

    def plan(self, args):
        x = args.tensor("logits")
        if x.dtype != "float32":
            raise self.unsupported(f"a {x.dtype} tensor")
        (self.axis,) = checked_axes(self, x, args.get("axis", -1), one=True)
        return x.shape

    def run(self, args):
        fn = softmax.log_softmax if self.fixed["log"] else softmax.softmax
        return fn(args.tensor("logits"), self.axis)


register(Softmax, {"nn.softmax": {"log": False}, "math.softmax": {"log": False},
                   "nn.log_softmax": {"log": True}, "math.log_softmax": {"log": True}})


class L2Normalize(TFFunction):
    """tf.math.l2_normalize: x * rsqrt(max(sum(x ** 2, axis), epsilon))."""
    params = ("x", "axis", "epsilon", "name", "dim")
    aliases = {"dim": "axis"}
    shaders = ("unary.comp", "reduce.comp", "binary.comp", "math_unary.comp")

    def plan(self, args):
        x = args.tensor("x")
        if x.dtype != "float32":
            raise self.unsupported(f"a {x.dtype} tensor")
        self.axes = checked_axes(self, x, args.get("axis"))
        return x.shape

    def run(self, args):
        x = args.tensor("x")
        squares = reduce.reduce("sum", elementwise.unary("square", x), self.axes, True)
        floor = elementwise.maximum(squares, float(args.get("epsilon", 1e-12)))
        return elementwise.mul(x, math_unary.math_unary("rsqrt", floor))


register(L2Normalize, ["math.l2_normalize", "nn.l2_normalize"])
