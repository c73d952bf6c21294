"""keras.ops with index values recorded in Keras 3 graphs: argmax / argmin (float32 in, int32 out,
as Keras) one_hot (int32 in: an integer Input or argmax's result; float32 out) and cast between float32 and
int32. Their dtypes
travel with the shapes (op_dtypes.py), so an int32 result reaching an op that takes float32 only
is refused at load.
"""
from __future__ import annotations


from ..ops import layout
from ..ops.arg_ops import arg_reduce, cast, one_hot
from .op_nodes import OpNode, Symbolic, _shape, register_op


@register_op("Argmax", "Argmin")
class ArgReduceOp(OpNode):
    """The first index of the extreme value along `axis`."""
    params = ("x", "axis", "keepdims")
    shaders = ("arg_reduce.comp",)
    input_dtypes = ("float32",)
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
        found = arg_reduce(x, axis, smallest)
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




@register_op("Cast")
class CastOp(OpNode):
    """keras.ops.cast to float32 or int32; other dtypes (bool, int64, float16...) are refused at
    load, since kerasgl's result would not have Keras's dtype."""
    params = ("x", "dtype")
    shaders = ("cast.comp",)
    input_dtypes = ("float32", "int32")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.target = (self.config or {}).get("dtype")
        if self.target not in ("float32", "int32"):
            raise self.unsupported(f"a cast to {self.target!r}")
        self.output_dtype = self.target

    def output_shape(self, bound):
        if bound.get("dtype", self.target) != self.target:
            raise self.unsupported(f"a cast to {bound.get('dtype')!r}")
        return tuple(_shape(bound["x"]))

    def run(self, bound):
        return cast(bound["x"], self.target)
