"""keras.ops.numpy (keras/src/ops/numpy.py) products as recorded in Keras 3 graphs: matmul, einsum
(any number of operands), tensordot, dot, inner, outer, vdot and kron.

Every product is an einsum: each operand's axes are named by letters; letters an operand has
alone (and the output lacks) are summed first; then operands are contracted pairwise, left to
right, each pair as one batched matmul (ops/matmul.py, batch dimensions broadcast as numpy
does) between transposes and reshapes; the last result is transposed into the output's order.
The matrix ops of keras.ops.linalg are in keras_ops/linalg.py.
"""
from __future__ import annotations

import math

from ...ops import elementwise, layout, matmul, reduce
from ...tensors import ownership
from ..node import OpNode, _shape, broadcast_dims, register_op
from ...layers.refusals import refuse_ops


_FRESH = 0x100          # letters for ellipsis axes: never in an equation


def parse_einsum(node, subscripts: str, ranks) -> tuple[list, str]:
    """(letters of each operand, letters of the output) with '...' spelled out."""
    text = subscripts.replace(" ", "")
    if "->" in text:
        inputs, output = text.split("->")
    else:
        inputs, output = text, None
    terms = inputs.split(",")
    if len(terms) != len(ranks):
        raise node.shape_error(f"the equation {subscripts!r} has {len(terms)} operands, the call "
                               f"{len(ranks)}.")
    widths = []
    for term, rank in zip(terms, ranks):
        plain = term.replace("...", "")
        if not plain.isalpha() and plain:
            raise node.shape_error(f"cannot read the equation {subscripts!r}.")
        width = rank - len(plain) if "..." in term else 0
        if width < 0 or ("..." not in term and len(plain) != rank):
            raise node.shape_error(f"{term!r} does not fit an operand of rank {rank}.")
        widths.append(width)
    fresh = [chr(_FRESH + i) for i in range(max(widths, default=0))]
    letters = [term.replace("...", "".join(fresh[len(fresh) - w:]))
               for term, w in zip(terms, widths)]
    for term in letters:
        if len(set(term)) != len(term):
            raise node.unsupported(f"the equation {subscripts!r} (a letter repeated within one "
                                   "operand: a diagonal)")
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
        raise node.shape_error(f"the output of {subscripts!r} names letters it cannot have.")
    return letters, out


def letter_sizes(node, operands) -> dict:
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
                raise node.shape_error(f"axis {c!r} has sizes {old} and {n}.")
    return sizes


def einsum_shape(node, shapes, letters, out) -> tuple:
    sizes = letter_sizes(node, list(zip(shapes, letters)))
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
