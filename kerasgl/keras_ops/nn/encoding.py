"""keras.ops.nn (keras/src/ops/nn.py) encodings of integer tensors as recorded in Keras 3 graphs:
one_hot (int32 in: an integer Input or argmax's result; float32 out) and multi_hot.
"""
from __future__ import annotations

from ...ops.arg_ops import one_hot
from ...ops.category_ops import bincount
from ..node import OpNode, _shape, register_op


@register_op("OneHot")
class OneHotOp(OpNode):
    """A float32 one-hot encoding on a new last axis; other axes, dtypes and sparse output are
    refused at load."""
    params = ("x", "num_classes", "axis", "dtype", "sparse")
    shaders = ("one_hot.comp",)
    input_dtypes = ("int32",)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.check({**self.options, "dtype": (self.config or {}).get("dtype")})

    def check(self, bound):
        dtype = bound.get("dtype", (self.config or {}).get("dtype"))
        if dtype not in (None, "float32"):
            raise self.unsupported(f"dtype={dtype!r}")
        if self.opt(bound, "sparse", False):
            raise self.unsupported("sparse=True")
        if self.opt(bound, "axis", -1) != -1:
            raise self.unsupported(f"axis={self.opt(bound, 'axis')!r} (only the new last axis)")
        classes = self.opt(bound, "num_classes")
        if not isinstance(classes, int) or isinstance(classes, bool) or classes < 0:
            raise self.unsupported(f"num_classes={classes!r}")
        return classes

    def output_shape(self, bound):
        return tuple(_shape(bound["x"])) + (self.check(bound),)

    def run(self, bound):
        return one_hot(bound["x"], self.check(bound))


@register_op("MultiHot")
class MultiHotOp(OpNode):
    """max over axis 1 of one_hot(inputs, num_classes): ops/category_ops.bincount (binary)."""
    params = ("inputs", "num_classes", "axis", "dtype")
    input_dtypes = ("int32",)
    shaders = ("category_encoding.comp",)

    def check(self, bound, shape):
        dtype = bound.get("dtype", (self.config or {}).get("dtype"))
        if dtype not in (None, "float32") or self.opt(bound, "sparse", False):
            raise self.unsupported(f"dtype={dtype!r} / sparse output")
        if self.opt(bound, "axis", -1) not in (-1, len(shape)) or len(shape) < 2:
            raise self.unsupported(f"axis={self.opt(bound, 'axis', -1)!r} with an input of rank "
                                   f"{len(shape)} (only the last axis, rank >= 2)")
        return int(self.opt(bound, "num_classes"))

    def output_shape(self, bound):
        shape = _shape(bound["inputs"])
        return (shape[0],) + tuple(shape[2:]) + (self.check(bound, shape),)

    def run(self, bound):
        x = bound["inputs"]
        return bincount(x, self.check(bound, x.shape), binary=True)
