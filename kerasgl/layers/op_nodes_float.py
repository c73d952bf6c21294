"""keras.ops op nodes on float32 tensors: clip, matmul, concatenate, softmax / log_softmax (moved
from op_nodes.py, which keeps the base classes, elementwise ops, reductions and layout views)."""
from __future__ import annotations

from ..ops import elementwise, matmul, merge, softmax, typed
from .op_dtypes import promote
from .op_nodes import OpNode, _shape, broadcast_dims, register_op


@register_op("Clip")
class ClipOp(OpNode):
    input_dtypes = ("float32",)
    params = ("x", "x_min", "x_max")
    shaders = ("binary.comp",)

    def run(self, bound):
        low = elementwise.maximum(bound["x"], float(self.opt(bound, "x_min")))
        try:
            return elementwise.minimum(low, float(self.opt(bound, "x_max")))
        finally:
            low.dispose()


@register_op("Matmul")
class MatmulOp(OpNode):
    input_dtypes = ("float32",)
    params = ("x1", "x2")
    shaders = ("matmul.comp",)

    def output_shape(self, bound):
        a, b = _shape(bound["x1"]), _shape(bound["x2"])
        if len(a) < 2 or len(b) < 2:
            raise self.unsupported("matmul of a rank-1 operand")
        if None not in (a[-1], b[-2]) and a[-1] != b[-2]:
            raise self.shape_error(f"cannot multiply {list(a)} by {list(b)}.")
        batch = broadcast_dims(a[:-2], b[:-2], f"Layer '{self.name}'")
        return batch + (a[-2], b[-1])

    def run(self, bound):
        return matmul.matmul(bound["x1"], bound["x2"])


@register_op("Concatenate")
class ConcatenateOp(OpNode):
    """float32 tensors, and bool ones (masks) as Keras types them: all bool -> bool, with float32
    -> float32 (the bools as 0.0 / 1.0). int32 is refused at load."""
    input_dtypes = ("float32", "bool")
    params = ("xs", "axis")
    shaders = ("concat.comp", "typed_unary.comp")

    def result_dtype(self, bound, dtypes):
        super().result_dtype(bound, set(dtypes))
        return promote(*dtypes) if dtypes else "float32"

    def output_shape(self, bound):
        shapes = [_shape(x) for x in bound["xs"]]
        rank = len(shapes[0])
        axis = int(self.opt(bound, "axis", 0))
        if not -rank <= axis < rank or any(len(s) != rank for s in shapes):
            raise self.shape_error(f"cannot concatenate shapes {[list(s) for s in shapes]} "
                                   f"along axis {axis}.")
        axis %= rank
        sizes = [s[axis] for s in shapes]
        out = list(shapes[0])
        out[axis] = None if None in sizes else sum(sizes)
        for d in range(rank):
            if d != axis:
                known = {s[d] for s in shapes if s[d] is not None}
                if len(known) > 1:
                    raise self.shape_error(f"cannot concatenate shapes "
                                           f"{[list(s) for s in shapes]} along axis {axis}.")
                out[d] = known.pop() if known else None
        return tuple(out)

    def run(self, bound):
        xs = list(bound["xs"])
        dtype = promote(*(x.dtype for x in xs))
        made = []
        try:
            for i, x in enumerate(xs):
                xs[i], new = typed.as_float(x)
                if new is not None:
                    made.append(new)
            joined = merge.concatenate(xs, int(self.opt(bound, "axis", 0)))
        finally:
            for tensor in made:
                tensor.dispose()
        if dtype == "float32":
            return joined
        try:
            return typed.convert(joined, dtype)
        finally:
            joined.dispose()


@register_op("Softmax", "LogSoftmax")
class SoftmaxOp(OpNode):
    input_dtypes = ("float32",)
    params = ("x", "axis")
    shaders = ("softmax.comp",)

    def run(self, bound):
        axis = self.opt(bound, "axis", -1)
        axis = tuple(axis) if isinstance(axis, list) else axis
        function = softmax.log_softmax if self.class_name == "LogSoftmax" else softmax.softmax
        return function(bound["x"], axis)
