"""keras.ops.linalg (keras/src/ops/linalg.py) as recorded in Keras 3 graphs: the small-matrix ops
(det, slogdet, logdet, inv, solve, solve_triangular, cholesky, cholesky_inverse, qr, lu_factor)
and norm (vector and matrix norms).

The matrix ops run ops/linalg_small.py: one shader invocation per matrix (Gauss-Jordan with
partial pivoting, Cholesky, or Householder QR with LAPACK's sign conventions), exact to float32
rounding for small well-conditioned matrices. norm runs from reductions (ops/reduce.py).
"""
from __future__ import annotations


from ..ops import elementwise, layout, linalg_small, matmul, reduce
from ..ops.slicing import strided_slice
from ..tensors import ownership
from ..layers.typed_shapes import TypedShape
from .node import OpNode, _shape, broadcast_dims, register_op
from .numpy.reductions import ReduceOp, _keepdims_axis


# -------------------------------------------------------------------------------------------------
# Linear algebra of small matrices
# -------------------------------------------------------------------------------------------------
class _Matrices(OpNode):
    params = ("x",)
    input_dtypes = ("float32",)
    shaders = ("linalg_small.comp",)

    def square(self, shape, what="x"):
        if len(shape) < 2 or None not in shape[-2:] and shape[-1] != shape[-2]:
            raise self.shape_error(f"{what} must be square matrices [..., n, n], not "
                                   f"{list(shape)}.")
        return shape


def _column(t, i):
    """t[..., i] of t [..., 3]."""
    window = [(0, n, 1) for n in t.shape[:-1]] + [(i, 1, 1)]
    return layout.reshape(strided_slice(t, window), t.shape[:-1])


@register_op("Det", "Logdet", "Slogdet")
class DeterminantOp(_Matrices):
    """det; slogdet's (sign, log|det|); logdet = slogdet's log|det| (Keras's, for any sign)."""
    shaders = ("linalg_small.comp", "strided_slice.comp")

    def output_shape(self, bound):
        shape = self.square(_shape(bound["x"]))[:-2]
        return [shape, shape] if self.class_name == "Slogdet" else shape

    def run(self, bound):
        def compute():
            triple = linalg_small.det_sign_logabs(bound["x"])
            if self.class_name == "Slogdet":
                return [_column(triple, 1), _column(triple, 2)]
            return _column(triple, 0 if self.class_name == "Det" else 2)
        return ownership.tidy.run(compute)


@register_op("Inv", "Cholesky")
class InverseOp(_Matrices):
    params = ("x", "upper")

    def output_shape(self, bound):
        return self.square(_shape(bound["x"]))

    def run(self, bound):
        if self.class_name == "Cholesky":
            return linalg_small.cholesky(bound["x"], bool(self.opt(bound, "upper", False)))
        return linalg_small.inverse(bound["x"])


@register_op("CholeskyInverse")
class CholeskyInverseOp(_Matrices):
    """inv(L L^T) (upper: inv(U^T U)) of one triangular factor: Keras's own op transposes every
    axis (jnp.transpose), so only a single matrix (rank 2) means what it says; a batch is
    refused at load."""
    params = ("x", "upper")
    shaders = ("linalg_small.comp", "transpose.comp", "matmul.comp")

    def output_shape(self, bound):
        shape = self.square(_shape(bound["x"]))
        if len(shape) != 2:
            raise self.unsupported(f"a batch of matrices {list(shape)} (Keras's cholesky_inverse "
                                   "transposes every axis of it)")
        return shape

    def run(self, bound):
        upper = bool(self.opt(bound, "upper", False))

        def compute():
            inv = linalg_small.inverse(bound["x"], tri=2 if upper else 1)
            other = layout.transpose(inv, (1, 0))
            return matmul.matmul(inv, other) if upper else matmul.matmul(other, inv)
        return ownership.tidy.run(compute)


@register_op("Solve", "SolveTriangular")
class SolveOp(_Matrices):
    params = ("a", "b", "lower")

    def output_shape(self, bound):
        a, b = self.square(_shape(bound["a"]), "a"), _shape(bound["b"])
        if len(b) not in (len(a), len(a) - 1):
            raise self.unsupported(f"b of shape {list(b)} with a of shape {list(a)}")
        matrix = b if len(b) == len(a) else b + (1,)
        broadcast_dims(a[:-1], matrix[:-1], f"Layer '{self.name}'")
        if any(p != q for p, q in zip(a[:-1], matrix[:-1])) and None not in a[:-1] + matrix[:-1]:
            raise self.unsupported(f"b of shape {list(b)} broadcast against a of shape {list(a)}")
        return b

    def run(self, bound):
        tri = 0
        if self.class_name == "SolveTriangular":
            tri = 1 if self.opt(bound, "lower", False) else 2
        return linalg_small.solve(bound["a"], bound["b"], tri)


@register_op("Qr")
class QrOp(_Matrices):
    """Householder QR with LAPACK's sign conventions (ops/linalg_small.qr), "reduced" or
    "complete"."""
    params = ("x",)
    shaders = ("qr.comp",)

    def mode(self, bound):
        mode = self.opt(bound, "mode", "reduced")
        if mode not in ("reduced", "complete"):
            raise self.unsupported(f"mode={mode!r}")
        return mode == "complete"

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        if len(shape) < 2 or None in shape[-2:]:
            raise self.shape_error(f"qr takes matrices [..., m, n] of known size, not "
                                   f"{list(shape)}.")
        m, n = shape[-2:]
        k = m if self.mode(bound) else min(m, n)
        return [shape[:-2] + (m, k), shape[:-2] + (k, n)]

    def run(self, bound):
        return list(linalg_small.qr(bound["x"], self.mode(bound)))


@register_op("LuFactor")
class LuFactorOp(_Matrices):
    """(lu, int32 pivots) with LAPACK's partial pivoting (ops/linalg_small.lu_factor)."""
    shaders = ("lu.comp",)

    def node_output_shape(self, args, kwargs):
        lu, pivots = super().node_output_shape(args, kwargs)
        return [lu, TypedShape(pivots, "int32")]

    def output_shape(self, bound):
        shape = self.square(_shape(bound["x"]))
        return [shape, shape[:-1]]

    def run(self, bound):
        return list(linalg_small.lu_factor(bound["x"]))


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
