"""einsum: an equation over operands whose axes are named by letters, run as batched matmuls.

Letters an operand has alone (and the output lacks) are summed first; then operands are
contracted pairwise, left to right, each pair as one batched matmul (matmul.py, batch dimensions
broadcast as numpy does) between transposes and reshapes; the last result is transposed into the
output's order. Keras 3's products (keras_ops/numpy/products.py: einsum, tensordot, dot, ...) and
TensorFlow's Einsum op layers (layers/tf_ops/) both contract through here.
"""
from __future__ import annotations

import math

from ..errors import ShapeError
from . import layout, matmul, reduce

_FRESH = 0x100          # letters for ellipsis axes: never in an equation


class EquationError(ShapeError):
    """An equation that does not fit its operands, or (unsupported) one kerasgl does not run:
    `what` names it for an "is not supported" message."""

    def __init__(self, message: str, unsupported: bool = False, what: str = ""):
        super().__init__(message)
        self.unsupported, self.what = unsupported, what or message


def parse(subscripts: str, ranks) -> tuple[list, str]:
    """(letters of each operand, letters of the output) with '...' spelled out."""
    text = subscripts.replace(" ", "")
    if "->" in text:
        inputs, output = text.split("->")
    else:
        inputs, output = text, None
    terms = inputs.split(",")
    if len(terms) != len(ranks):
        raise EquationError(f"the equation {subscripts!r} has {len(terms)} operands, the call "
                            f"{len(ranks)}.")
    widths = []
    for term, rank in zip(terms, ranks):
        plain = term.replace("...", "")
        if not plain.isalpha() and plain:
            raise EquationError(f"cannot read the equation {subscripts!r}.")
        width = rank - len(plain) if "..." in term else 0
        if width < 0 or ("..." not in term and len(plain) != rank):
            raise EquationError(f"{term!r} does not fit an operand of rank {rank}.")
        widths.append(width)
    fresh = [chr(_FRESH + i) for i in range(max(widths, default=0))]
    letters = [term.replace("...", "".join(fresh[len(fresh) - w:]))
               for term, w in zip(terms, widths)]
    for term in letters:
        if len(set(term)) != len(term):
            what = (f"the equation {subscripts!r} (a letter repeated within one operand: a "
                    "diagonal)")
            raise EquationError(f"{what} is not supported.", unsupported=True, what=what)
    if output is None:
        counts = {}
        for term in letters:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(fresh) + "".join(sorted(c for c, k in counts.items()
                                              if k == 1 and ord(c) < _FRESH))
    else:
        out = output.replace("...", "".join(fresh))
    seen = set("".join(letters))
    if len(set(out)) != len(out) or any(c not in seen for c in out):
        raise EquationError(f"the output of {subscripts!r} names letters it cannot have.")
    return letters, out


def letter_sizes(operands) -> dict:
    """letter -> size over (shape, letters) pairs: None unknown; sizes 1 broadcast."""
    sizes = {}
    for shape, term in operands:
        for c, n in zip(term, shape):
            old = sizes.setdefault(c, n)
            if n == 1 or old == n:
                continue
            if n is None:
                sizes[c] = None if old == 1 else old
                continue
            if old is None or old == 1:
                sizes[c] = n
            else:
                raise ShapeError(f"axis {c!r} has sizes {old} and {n}.")
    return sizes


def output_shape(shapes, letters, out) -> tuple:
    sizes = letter_sizes(list(zip(shapes, letters)))
    return tuple(sizes[c] for c in out)


def _sum_unneeded(x, term, needed):
    axes = tuple(a for a, c in enumerate(term) if c not in needed)
    if not axes:
        return x, term
    return reduce.reduce("sum", x, axes, False), "".join(c for c in term if c in needed)


def _arrange(x, term, order, shape):
    """x (letters term) transposed into `order`, reshaped to `shape`."""
    perm = [term.index(c) for c in order]
    if perm != sorted(perm):
        x = layout.transpose(x, perm)
    return layout.reshape(x, shape)


def _pair(a, ta, b, tb, keep):
    batch = [c for c in ta if c in tb and c in keep]
    inner = [c for c in ta if c in tb and c not in keep]
    rows = [c for c in ta if c not in tb]
    cols = [c for c in tb if c not in ta]
    da, db = dict(zip(ta, a.shape)), dict(zip(tb, b.shape))
    for c in inner:
        if da[c] != db[c]:
            raise ValueError(f"einsum: axis {c!r} has sizes {da[c]} and {db[c]}.")
    k = math.prod(da[c] for c in inner)
    m, n = math.prod(da[c] for c in rows), math.prod(db[c] for c in cols)
    left = _arrange(a, ta, batch + rows + inner, tuple(da[c] for c in batch) + (m, k))
    right = _arrange(b, tb, batch + inner + cols, tuple(db[c] for c in batch) + (k, n))
    product = matmul.matmul(left, right)
    shape = product.shape[:-2] + tuple(da[c] for c in rows) + tuple(db[c] for c in cols)
    return layout.reshape(product, shape), "".join(batch + rows + cols)


def contract(operands, out: str):
    """einsum of (tensor, letters) pairs into the letters `out` (call inside a tidy scope)."""
    work = []
    for i, (x, term) in enumerate(operands):
        others = set(out).union(*(t for j, (_, t) in enumerate(operands) if j != i))
        work.append(_sum_unneeded(x, term, others))
    while len(work) > 1:
        (a, ta), (b, tb) = work[0], work[1]
        keep = set(out).union(*(t for _, t in work[2:]))
        work = [_pair(a, ta, b, tb, keep)] + work[2:]
    x, term = work[0]
    x, term = _sum_unneeded(x, term, set(out))
    sizes = dict(zip(term, x.shape))
    return _arrange(x, term, list(out), tuple(sizes[c] for c in out))
