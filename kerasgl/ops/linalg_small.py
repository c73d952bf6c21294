"""Small dense linear algebra over batches of matrices (keras.ops.linalg): shaders/linalg_small.comp
runs one invocation per matrix, Gauss-Jordan elimination with partial pivoting (solve, inverse,
determinant) or the Cholesky factorisation. Meant for small matrices: the work of one matrix is
serial."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .storage_ops import any_storage


def _square(a: Tensor, what: str) -> tuple[int, int]:
    if not isinstance(a, Tensor):
        raise TypeError(f"{what} takes a kerasgl Tensor, not {type(a).__name__}.")
    a._check_alive()
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.dtype != "float32":
        raise ShapeError(f"{what}: expected float32 square matrices [..., n, n]. Received "
                         f"{a.dtype} of shape {list(a.shape)}.")
    return math.prod(a.shape[:-2]), a.shape[-1]


def _gauss(a, b, want, tri, m, out_shape):
    count, n = _square(a, "linalg")

    def compute():
        out = empty(out_shape)
        if out.size == 0 or count == 0:
            return out
        scratch = empty((count, n, n + m))
        dispatch.run("linalg_small.comp", defines={"CHOLESKY": False, "IDENTITY": b is None},
                     buffers=[a, b if b is not None else a, scratch, out],
                     uniforms={"n": n, "m": m, "count": count, "tri": tri, "want": want,
                               "upper": 0},
                     groups=dispatch.groups_for(count))
        return out
    return ownership.tidy.run(compute)


@any_storage
def det_sign_logabs(a: Tensor) -> Tensor:
    """[..., 3]: det, its sign and log|det| of each matrix of a [..., n, n]."""
    return _gauss(a, None, 1, 0, 0, a.shape[:-2] + (3,))


@any_storage
def inverse(a: Tensor, tri: int = 0) -> Tensor:
    """A^-1 of each matrix (tri 1 / 2: of its lower / upper triangle)."""
    return _gauss(a, None, 0, tri, a.shape[-1], a.shape)


@any_storage
def solve(a: Tensor, b: Tensor, tri: int = 0) -> Tensor:
    """A^-1 B for a [..., n, n] and b [..., n, m] (the same batch), or b [..., n] (vectors)."""
    _square(a, "solve")
    vector = b.ndim == a.ndim - 1
    rhs = b.shape + (1,) if vector else b.shape
    if rhs[:-1] != a.shape[:-1] or b.dtype != "float32":
        raise ShapeError(f"solve: b of shape {list(b.shape)} does not fit a of shape "
                         f"{list(a.shape)}.")
    return _gauss(a, b, 0, tri, rhs[-1], b.shape)


@any_storage
def cholesky(a: Tensor, upper: bool = False) -> Tensor:
    count, n = _square(a, "cholesky")
    out = empty(a.shape)
    if out.size:
        dispatch.run("linalg_small.comp", defines={"CHOLESKY": True, "IDENTITY": False},
                     buffers=[a, a, out, out],
                     uniforms={"n": n, "count": count, "upper": int(bool(upper))},
                     groups=dispatch.groups_for(count))
    return out


@any_storage
def qr(a: Tensor, complete: bool = False) -> tuple[Tensor, Tensor]:
    """(q, r) of each matrix of a [..., m, n] by Householder reflections, as LAPACK (and so
    jnp.linalg.qr on CPU) computes them: q [..., m, k], r [..., k, n], k = min(m, n) (m for
    complete)."""
    if not isinstance(a, Tensor) or a.ndim < 2 or a.dtype != "float32":
        raise ShapeError("qr takes float32 matrices [..., m, n].")
    a._check_alive()
    m, n = a.shape[-2:]
    count, k = math.prod(a.shape[:-2]), min(m, n)
    kq = m if complete else k

    def compute():
        q, r = empty(a.shape[:-2] + (m, kq)), empty(a.shape[:-2] + (kq, n))
        if count and m and n:
            scratch, work = empty((count, m * n + k)), empty((count, m, kq))
            dispatch.run("qr.comp", buffers=[a, scratch, q, r, work],
                         uniforms={"m": m, "n": n, "k": k, "kq": kq, "kr": kq, "count": count},
                         groups=dispatch.groups_for(count))
        return q, r
    return ownership.tidy.run(compute)


@any_storage
def lu_factor(a: Tensor) -> tuple[Tensor, Tensor]:
    """(lu [..., n, n], int32 pivots [..., n]) of each square matrix, as LAPACK's getrf."""
    count, n = _square(a, "lu_factor")
    lu, piv = empty(a.shape), empty(a.shape[:-1], "int32")
    if count and n:
        dispatch.run("lu.comp", buffers=[a, lu, piv], uniforms={"n": n, "count": count},
                     groups=dispatch.groups_for(count))
    return lu, piv
