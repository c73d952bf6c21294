"""tf.linalg.matmul (also tf.matmul and `@`) and tf.einsum, on float32 tensors (ops/matmul.py,
ops/einsum.py).

tf.keras records tf.einsum(equation, *operands) with the equation alone: the operands, passed
through *args, are not saved, and tf-keras itself cannot load such a file back. kerasgl refuses
it when the layer is made, saying so. TensorFlowOpLayer's Einsum op keeps its operands
(node_def.py) and runs.
"""
from __future__ import annotations

from ...errors import ShapeError
from ...ops import einsum, matmul
from ..typed_shapes import broadcast_dims
from .arguments import has_refs, is_tensor
from .elementwise import shape_of
from .functions import TFFunction, register


class Matmul(TFFunction):
    params = ("a", "b", "transpose_a", "transpose_b", "adjoint_a", "adjoint_b", "a_is_sparse",
              "b_is_sparse", "output_type", "grad_a", "grad_b", "name")
    shaders = ("matmul.comp",)

    def plan(self, args):
        a, b = (self.operand(args, p, "float32") for p in ("a", "b"))
        if not (is_tensor(a) and is_tensor(b)) or {a.dtype, b.dtype} != {"float32"}:
            raise self.unsupported("operands that are not float32 tensors")
        if args.get("output_type") not in (None, "float32"):
            raise self.unsupported(f"output_type={args.get('output_type')!r}")
        self.ta = bool(args.get("transpose_a", False) or args.get("adjoint_a", False))
        self.tb = bool(args.get("transpose_b", False) or args.get("adjoint_b", False))
        sa, sb = shape_of(a), shape_of(b)
        if len(sa) < 2 or len(sb) < 2:
            raise self.shape_error(f"operands of shapes {sa} and {sb} (rank 2 or more).")
        m, ka = (sa[-1], sa[-2]) if self.ta else (sa[-2], sa[-1])
        kb, n = (sb[-1], sb[-2]) if self.tb else (sb[-2], sb[-1])
        if None not in (ka, kb) and ka != kb:
            raise self.shape_error(f"cannot multiply {sa} by {sb}.")
        return broadcast_dims(sa[:-2], sb[:-2], f"Layer '{self.layer.name}'") + (m, n)

    def run(self, args):
        a, b = (self.operand(args, p) for p in ("a", "b"))
        return matmul.matmul(a, b, transpose_a=self.ta, transpose_b=self.tb)


register(Matmul, ["linalg.matmul", "matmul"])


class Einsum(TFFunction):
    params = ("equation", "inputs")
    shaders = ("matmul.comp", "transpose.comp", "reduce.comp")

    def check_recorded(self, first, kwargs: dict) -> None:
        if not has_refs([first, kwargs]):
            raise self.layer.unsupported(
                f"a tf.einsum call saved without its operands (tf.keras writes the equation "
                f"{first!r} but drops the tensors it was called on, so tf-keras cannot load this "
                "file either; rebuild the model with keras.ops.einsum or "
                "keras.layers.EinsumDense)")

    def plan(self, args):
        equation, operands = args.static("equation"), args.get("inputs")
        if not isinstance(operands, list) or not all(is_tensor(t) for t in operands) \
                or {t.dtype for t in operands} != {"float32"}:
            raise self.unsupported("operands that are not float32 tensors")
        try:
            self.letters, self.out = einsum.parse(str(equation), [t.ndim for t in operands])
            return einsum.output_shape([t.shape for t in operands], self.letters, self.out)
        except einsum.EquationError as exc:
            raise (self.unsupported(exc.what) if exc.unsupported else
                   self.shape_error(str(exc))) from None
        except ShapeError as exc:
            raise self.shape_error(str(exc)) from None

    def run(self, args):
        return einsum.contract(list(zip(args.get("inputs"), self.letters)), self.out)


register(Einsum, ["einsum"])
