"""keras.ops.linalg (keras/src/ops/linalg.py) as recorded in Keras 3 graphs: the small-matrix ops
(det, slogdet, logdet, inv, solve, solve_triangular, cholesky, cholesky_inverse, qr, lu_factor)
and norm (vector norms and the matrix norms that need no SVD).

The matrix ops run ops/linalg_small.py: one shader invocation per matrix (Gauss-Jordan with
partial pivoting, Cholesky, or Householder QR with LAPACK's sign conventions), exact to float32
rounding for small well-conditioned matrices. norm runs from elementwise ops and reductions
(ops/reduce.py), as jnp.linalg.norm composes them.
"""
from __future__ import annotations

import numpy as np

from ..layers.typed_shapes import TypedShape
from ..ops import elementwise, layout, linalg_small, matmul, reduce
from ..ops import typed as typed_ops
from ..ops.slicing import strided_slice
from ..tensors import ownership
from .node import OpNode, _shape, broadcast_dims, register_op
from .numpy.reductions import ReduceOp


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


_INF = float("inf")
# Matrix norms from singular values: kerasgl has no SVD.
_SINGULAR_VALUE_ORDERS = ("nuc", 2, -2)


@register_op("Norm")
class NormOp(ReduceOp):
    """jnp.linalg.norm over one axis (a vector norm: ord None or 2, 1, inf, -inf, 0 (the count
    of nonzeros), any other p: sum(|x|**p)**(1/p)) or two (a matrix norm: None or "fro", 1, -1
    (max / min over the columns of their sums of |x|), inf, -inf (the same over rows)), int32 and
    bool inputs as float32 (Keras's result dtype). Refused at load: the singular-value norms
    ("nuc", 2, -2 over two axes) and axis=None (one norm of the whole batch flattened, which
    Keras's own predict cannot batch)."""
    params = ("x", "ord", "axis", "keepdims")
    input_dtypes = ("float32", "int32", "bool")
    shaders = ("reduce.comp", "binary.comp", "unary.comp", "typed_unary.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.axes({})                    # the config's options: refused with the other layers

    def output_shape(self, bound):
        self.axes(bound, len(_shape(bound["x"])))
        return super().output_shape(bound)

    def axes(self, bound, rank: int | None = None) -> tuple:
        """The axes as given (a matrix norm's (rows, columns) in order), non-negative once the
        rank is known; unsupported() for what kerasgl does not compute."""
        order, axis = self.opt(bound, "ord"), self.opt(bound, "axis")
        if axis is None:
            raise self.unsupported("axis=None (one norm of the whole batch, flattened)")
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        if len(axes) == 1 and not (order is None or isinstance(order, (int, float))):
            raise self.unsupported(f"ord={order!r} for a vector norm")
        if len(axes) == 2 and order in _SINGULAR_VALUE_ORDERS:
            raise self.unsupported(f"ord={order!r} over two axes (a matrix norm of singular "
                                   "values: kerasgl has no SVD)")
        if len(axes) == 2 and order not in (None, "fro", 1, -1, _INF, -_INF):
            raise self.unsupported(f"ord={order!r} for a matrix norm")
        if len(axes) not in (1, 2):
            raise self.unsupported(f"axis={axis!r} (one axis for a vector norm, two for a "
                                   "matrix norm)")
        if rank is None:
            return axes
        if len(set(self.axes_of(list(axes), rank))) != len(axes):
            raise self.shape_error(f"axis={axis!r} repeats an axis.")
        return tuple(a % rank for a in axes)

    def run(self, bound):
        x = bound["x"]
        order, keepdims = self.opt(bound, "ord"), bool(self.opt(bound, "keepdims", False))
        axes = self.axes(bound, x.ndim)

        def compute():
            source = typed_ops.as_float(x)[0]          # a converted copy is tidy's to free
            if len(axes) == 2:
                return self._matrix_norm(source, order, axes, keepdims)
            return self._vector_norm(source, order, axes, keepdims)
        return ownership.tidy.run(compute)

    @staticmethod
    def _euclidean(x, axes, keepdims):
        """sqrt(sum(x * x)): the vector 2-norm, the matrix Frobenius norm."""
        return elementwise.unary("sqrt", reduce.reduce("sum", elementwise.mul(x, x), axes,
                                                       keepdims))

    @classmethod
    def _vector_norm(cls, x, order, axes, keepdims):
        if order is None or order == 2:
            return cls._euclidean(x, axes, keepdims)
        if order == 0:                             # the count of nonzeros (NaN counts)
            nonzero = typed_ops.unary("float_truth_as_float", x, "float32")
            return reduce.reduce("sum", nonzero, axes, keepdims)
        magnitude = elementwise.unary("abs", x)
        if order in (_INF, -_INF):
            return reduce.reduce("max" if order > 0 else "min", magnitude, axes, keepdims)
        if order == 1:
            return reduce.reduce("sum", magnitude, axes, keepdims)
        # jnp: sum(|x| ** p) ** (1 / p), p and 1 / p float32 constants. GLSL leaves pow(0, y)
        # undefined for y <= 0 (llvmpipe gives 0, not jnp's inf), so a negative p runs as
        # 1 / |x| ** -p: inf for a zero, which makes the norm 1 / inf ** -(1 / p) = 0, as jnp.
        p, inverse = np.float32(order), np.float32(1.0) / np.float32(order)

        def power(t, exponent):
            if exponent > 0:
                return elementwise.binary("pow", t, float(exponent))
            return elementwise.div(1.0, elementwise.binary("pow", t, float(-exponent)))
        return power(reduce.reduce("sum", power(magnitude, p), axes, keepdims), inverse)

    @classmethod
    def _matrix_norm(cls, x, order, axes, keepdims):
        if order in (None, "fro"):
            return cls._euclidean(x, axes, keepdims)
        # 1 / -1: the largest / smallest column sum of |x| (summed over the rows); inf / -inf:
        # the largest / smallest row sum. The second reduction also runs over the summed axis,
        # of size 1 by then: keepdims then applies to both.
        rows, columns = axes
        summed = rows if order in (1, -1) else columns
        sums = reduce.reduce("sum", elementwise.unary("abs", x), summed, True)
        return reduce.reduce("max" if order > 0 else "min", sums, axes, keepdims)
