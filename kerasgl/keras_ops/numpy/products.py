"""keras.ops.numpy (keras/src/ops/numpy.py) products as recorded in Keras 3 graphs: matmul, einsum
(any number of operands), tensordot, dot, inner, outer, vdot and kron.

Every product is an einsum: each operand's axes are named by letters, and ops/einsum.py
contracts them (letters an operand has alone summed first, then operands pairwise, each pair
one batched matmul between transposes and reshapes). The matrix ops of keras.ops.linalg are in
keras_ops/linalg.py.
"""
from __future__ import annotations

import math

from ...errors import ShapeError
from ...layers.refusals import refuse_ops
from ...ops import einsum, elementwise, layout, matmul, reduce
from ...tensors import ownership
from ..node import OpNode, _shape, broadcast_dims, register_op


def parse_einsum(node, subscripts: str, ranks) -> tuple[list, str]:
    """(letters of each operand, letters of the output) with '...' spelled out (ops/einsum.py),
    errors naming the node."""
    try:
        return einsum.parse(subscripts, ranks)
    except einsum.EquationError as exc:
        raise (node.unsupported(exc.what) if exc.unsupported else node.shape_error(str(exc))) \
            from None


def einsum_shape(node, shapes, letters, out) -> tuple:
    try:
        return einsum.output_shape(shapes, letters, out)
    except ShapeError as exc:
        raise node.shape_error(str(exc)) from None


contract = einsum.contract


class _Product(OpNode):
    """A product spelled as an einsum: letters(bound, ranks) -> (operand letters, output)."""
    params = ("x1", "x2")
    input_dtypes = ("float32",)
    shaders = ("matmul.comp", "transpose.comp", "reduce.comp")

    def operands(self, bound):
        return [bound["x1"], bound["x2"]]

    def letters(self, bound, ranks):
        raise NotImplementedError

    def output_shape(self, bound):
        shapes = [_shape(x) for x in self.operands(bound)]
        letters, out = self.letters(bound, [len(s) for s in shapes])
        return einsum_shape(self, shapes, letters, out)

    def run(self, bound):
        xs = self.operands(bound)
        letters, out = self.letters(bound, [x.ndim for x in xs])
        return ownership.tidy.run(lambda: contract(list(zip(xs, letters)), out))


@register_op("Einsum")
class EinsumOp(_Product):
    params = ("operands",)

    def bind(self, args, kwargs):
        return {"operands": list(args), **kwargs}

    def operands(self, bound):
        return bound["operands"]

    def letters(self, bound, ranks):
        return parse_einsum(self, self.opt(bound, "subscripts"), ranks)


def _abc(n, start=0):
    return "".join(chr(ord("a") + start + i) for i in range(n))


@register_op("Tensordot")
class TensordotOp(_Product):
    params = ("x1", "x2", "axes")

    def letters(self, bound, ranks):
        axes, (ra, rb) = self.opt(bound, "axes", 2), ranks
        if isinstance(axes, int):
            pa, pb = list(range(ra - axes, ra)), list(range(axes))
        else:
            pa, pb = ([v] if isinstance(v, int) else list(v) for v in axes)
        pa, pb = [p % ra for p in pa], [p % rb for p in pb]
        if len(pa) != len(pb) or len(set(pa)) != len(pa):
            raise self.shape_error(f"axes {axes!r} do not pair the operands' axes.")
        ta, tb = list(_abc(ra)), list(_abc(rb, ra))
        for p, q in zip(pa, pb):
            tb[q] = ta[p]
        out = [c for i, c in enumerate(ta) if i not in pa] \
            + [c for i, c in enumerate(tb) if i not in pb]
        return ["".join(ta), "".join(tb)], "".join(out)


@register_op("Dot")
class DotOp(_Product):
    """numpy.dot: the last axis of x1 against the second-to-last of x2 (the last, for a vector)."""

    @staticmethod
    def contracted_axis(rank_b):
        return -2 if rank_b >= 2 else -1

    def letters(self, bound, ranks):
        ra, rb = ranks
        ta, tb = list(_abc(ra)), list(_abc(rb, ra))
        if ra and rb:
            tb[self.contracted_axis(rb)] = ta[-1]
        out = [c for c in ta if c not in tb] + [c for c in tb if c not in ta]
        return ["".join(ta), "".join(tb)], "".join(out)


@register_op("Inner")
class InnerOp(DotOp):
    """numpy.inner: the last axis of x1 against the last of x2."""

    @staticmethod
    def contracted_axis(rank_b):
        return -1


def _size(shape):
    return None if None in shape else math.prod(shape)


@register_op("Outer", "Vdot")
class FlatProductOp(OpNode):
    """outer: both flattened, a[:, None] * b[None, :]; vdot: both flattened, their dot."""
    params = ("x1", "x2")
    input_dtypes = ("float32",)
    shaders = ("binary.comp", "reduce.comp")

    def output_shape(self, bound):
        a, b = _size(_shape(bound["x1"])), _size(_shape(bound["x2"]))
        if self.class_name == "Vdot":
            if None not in (a, b) and a != b:
                raise self.shape_error(f"vdot of {a} and {b} elements.")
            return ()
        return (a, b)

    def run(self, bound):
        a, b = bound["x1"], bound["x2"]

        def compute():
            if self.class_name == "Outer":
                return elementwise.mul(layout.reshape(a, (a.size, 1)),
                                       layout.reshape(b, (1, b.size)))
            return reduce.reduce("sum", elementwise.mul(layout.reshape(a, (a.size,)),
                                                        layout.reshape(b, (b.size,))), None, False)
        return ownership.tidy.run(compute)


@register_op("Kron")
class KronOp(OpNode):
    """kron(a, b): a[i] * b[j] at i * b.shape + j, axis by axis (the shorter shape padded with 1s
    in front): a broadcast product of interleaved shapes, reshaped."""
    params = ("x1", "x2")
    input_dtypes = ("float32",)
    shaders = ("binary.comp",)

    @staticmethod
    def _shapes(a, b):
        r = max(len(a), len(b))
        return (1,) * (r - len(a)) + tuple(a), (1,) * (r - len(b)) + tuple(b)

    def output_shape(self, bound):
        a, b = self._shapes(_shape(bound["x1"]), _shape(bound["x2"]))
        return tuple(None if None in (p, q) else p * q for p, q in zip(a, b))

    def run(self, bound):
        x, y = bound["x1"], bound["x2"]
        a, b = self._shapes(x.shape, y.shape)

        def compute():
            left = layout.reshape(x, tuple(d for n in a for d in (n, 1)))
            right = layout.reshape(y, tuple(d for n in b for d in (1, n)))
            return layout.reshape(elementwise.mul(left, right), tuple(p * q for p, q in zip(a, b)))
        return ownership.tidy.run(compute)


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


refuse_ops({
    "SVD": "it is an iterative factorisation whose singular vectors' signs are LAPACK's choice",
    "Eig": "its eigenvalues and eigenvectors are complex, which kerasgl tensors cannot hold",
    "Eigh": "it is an iterative factorisation whose eigenvectors' signs are LAPACK's choice",
    "Lstsq": "it solves through an SVD that drops small singular values (rank-deficient "
             "systems), not run here",
    "Pinv": "it drops singular values below a tolerance (an SVD), not run here",
    "MatrixRank": "it counts singular values above a tolerance (an SVD), not run here",
})
