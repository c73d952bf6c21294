"""keras.ops with index values recorded in Keras 3 graphs: argmax / argmin (int32 out, as Keras;
int32 and bool inputs compared as float32, exact below 2**24) one_hot (int32 in: an integer Input
or argmax's result; float32 out) and cast between float32, int32 and bool. Their dtypes travel
with the shapes (op_dtypes.py), so a result reaching an op that cannot take its dtype is refused
at load.
"""
from __future__ import annotations


from ..ops import layout, typed
from ..ops.arg_ops import arg_reduce, one_hot
from .op_nodes import OpNode, Symbolic, _shape, register_op


@register_op("Argmax", "Argmin")
class ArgReduceOp(OpNode):
    """The first index of the extreme value along `axis`."""
    params = ("x", "axis", "keepdims")
    shaders = ("arg_reduce.comp", "typed_unary.comp")
    input_dtypes = ("float32", "int32", "bool")
    output_dtype = "int32"

    def output_shape(self, bound):
        shape, axis = _shape(bound["x"]), self.opt(bound, "axis")
        keepdims = bool(self.opt(bound, "keepdims", False))
        if axis is None:     # one index for the whole batch: Keras's own predict cannot batch it
            raise self.unsupported("axis=None (an index into the flattened batch)")
        if not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
            raise self.shape_error(f"axis {axis!r} is out of range for rank {len(shape)}.")
        axis %= len(shape)
        if shape[axis] == 0:
            raise self.shape_error(f"an {self.class_name.lower()} over an empty axis.")
        return shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1:]

    def run(self, bound):
        x, axis = bound["x"], self.opt(bound, "axis")
        smallest = self.class_name == "Argmin"
        out_shape = self.output_shape({**bound, "x": Symbolic(tuple(x.shape))})
        source, made = typed.as_float(x)
        try:
            found = arg_reduce(source, axis, smallest)
        finally:
            if made is not None:
                made.dispose()
        if tuple(found.shape) == tuple(out_shape):
            return found
        try:
            return layout.reshape(found, out_shape)
        finally:
            found.dispose()


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




# Keras dtype -> what a cast to it gives under JAX without x64: int64 / float64 values are int32 /
# float32 there (Keras's predict returns those).
CAST_TARGETS = {"float32": "float32", "int32": "int32", "bool": "bool", "int64": "int32",
                "float64": "float32"}


@register_op("Cast")
class CastOp(OpNode):
    """keras.ops.cast between float32, int32 and bool (float -> int32 toward zero, saturating,
    NaN -> 0, as XLA converts; -> bool: nonzero); int64 / float64 give int32 / float32, as Keras
    does under JAX. Other dtypes (float16, bfloat16, uint8, int8, ...) are refused at load:
    kerasgl's result would not have Keras's dtype."""
    params = ("x", "dtype")
    shaders = ("typed_unary.comp",)
    input_dtypes = ("float32", "int32", "bool")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.target = (self.config or {}).get("dtype")
        if self.target not in CAST_TARGETS:
            raise self.unsupported(f"a cast to {self.target!r} (kerasgl holds float32, int32 and "
                                   "bool; Keras's result would have that dtype)")
        self.output_dtype = CAST_TARGETS[self.target]

    def output_shape(self, bound):
        if bound.get("dtype", self.target) != self.target:
            raise self.unsupported(f"a cast to {bound.get('dtype')!r}")
        return tuple(_shape(bound["x"]))

    def run(self, bound):
        return typed.convert(bound["x"], self.output_dtype)
