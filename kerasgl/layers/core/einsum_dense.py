"""EinsumDense: einsum(equation, x, kernel) (+ bias, activation), lowered to one batched matmul.

Every equation Keras accepts ("ab,bc->ac", "...b,bc->...c", "ab...,bc->ac...") names each axis
with a letter. The ellipsis is spelled out with fresh letters once the input rank is known; then
each letter is one of: a batch letter (input, kernel and output: the matmul's batch), a contracted
letter (input and kernel only: the matmul's K), an input letter (input and output: M), a kernel
letter (kernel and output: N), or an input letter in neither kernel nor output (summed first).
The input is transposed to (batch, M, K), the kernel is prepared at build as (batch, K, N), and
the matmul's (batch, M, N) result is transposed back into the output's letter order.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ...ops import elementwise, layout, matmul, reduce
from ...tensors import ownership
from ...tensors.tensor import view
from .. import activation_functions
from ..base import Layer, register

_FORMS = (re.compile(r"^([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$"),
          re.compile(r"^\.\.\.([a-zA-Z]+),([a-zA-Z]+)->\.\.\.([a-zA-Z]+)$"),
          re.compile(r"^([a-zA-Z]{2,})\.\.\.,([a-zA-Z]+)->([a-zA-Z]+)\.\.\.$"))


@register("EinsumDense")
class EinsumDense(Layer):
    shaders = ("transpose.comp", "matmul.comp", "binary.comp", "unary.comp")
    mask_behaviour = "drops"      # Keras's EinsumDense does not support masking: no mask flows on

    @classmethod
    def weight_count(cls, config):
        return 1 + bool(config.get("bias_axes"))

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        if self.option("lora_rank"):
            raise self.unsupported("a LoRA-enabled EinsumDense (lora_rank)")
        dtype = str(self.option("dtype", ""))
        if self.option("quantization_config") \
                or any(q in dtype for q in ("int8", "int4", "float8")):
            raise self.unsupported("a quantized EinsumDense")
        self.equation = str(self.option("equation"))
        forms = [f.match(self.equation) for f in _FORMS]
        if not any(forms):
            raise self.unsupported(f"the einsum equation {self.equation!r}")
        self.form = next(i for i, m in enumerate(forms) if m)
        self.specs = forms[self.form].groups()
        self.bias_axes = self.option("bias_axes") or ""
        self.expect_weights(1 + bool(self.bias_axes))
        self.activation = self.option("activation")
        self.fused = activation_functions.pointwise(self.activation, keras_major, f"Layer '{self.name}'")
        if len(self.weights_np[0].shape) != len(self.specs[1]):
            raise self.shape_error(f"kernel of shape {self.weights_np[0].shape} does not fit the "
                                   f"kernel letters {self.specs[1]!r} of {self.equation!r}.")

    # -- the equation with its ellipsis spelled out for an input of this rank --------------------
    def _letters(self, rank: int):
        inp, ker, out = self.specs
        elided = rank - len(inp)
        if elided < 0 or (self.form == 0 and elided != 0):
            raise self.shape_error(f"equation {self.equation!r} does not fit an input of rank "
                                   f"{rank}.")
        fresh = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                 if c not in inp + ker + out][:elided]
        extra = "".join(fresh)
        if self.form == 1:
            return extra + inp, ker, extra + out
        if self.form == 2:
            return inp + extra, ker, out + extra
        return inp, ker, out

    def compute_output_shape(self, input_shape):
        inp, ker, out = self._letters(len(input_shape))
        sizes = dict(zip(inp, input_shape))
        for letter, size in zip(ker, self.weights_np[0].shape):
            if letter in sizes and sizes[letter] is not None and sizes[letter] != size:
                raise self.shape_error(f"input shape {tuple(input_shape)} does not fit the kernel "
                                       f"of shape {self.weights_np[0].shape} in {self.equation!r}.")
            sizes.setdefault(letter, size)
        return tuple(sizes[c] for c in out)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        inp, ker, out = self._letters(len(input_shape))
        self.batch = [c for c in inp if c in ker and c in out]
        self.contract = [c for c in inp if c in ker and c not in out]
        self.rows = [c for c in inp if c not in ker and c in out]
        self.cols = [c for c in ker if c not in inp and c in out]
        self.input_summed = tuple(i for i, c in enumerate(inp) if c not in ker and c not in out)
        kept_inp = [c for c in inp if c in ker or c in out]
        self.input_perm = tuple(kept_inp.index(c) for c in self.batch + self.rows + self.contract)
        if any(c not in inp and c not in out for c in ker):   # Keras refuses these too
            raise self.shape_error(f"a kernel letter of {self.equation!r} is in neither the input "
                                   "nor the output.")
        kernel = np.asarray(self.weights_np[0], np.float32)
        kernel = kernel.transpose([ker.index(c) for c in self.batch + self.contract + self.cols])
        self.kernel_sizes = dict(zip(self.batch + self.contract + self.cols, kernel.shape))
        n_batch = math.prod(kernel.shape[:len(self.batch)])
        k = math.prod(kernel.shape[len(self.batch):len(self.batch) + len(self.contract)])
        n = math.prod(kernel.shape[len(self.batch) + len(self.contract):])
        kernel = kernel.reshape((n_batch, k, n) if self.batch else (k, n))
        natural = self.batch + self.rows + self.cols
        self.output_perm = tuple(natural.index(c) for c in out)
        # The bias joins the matmul (one value per column) when it varies along the kernel letters
        # only and those come last in the output in matmul order; otherwise it is added afterwards.
        bias = np.asarray(self.weights_np[1], np.float32) if self.bias_axes else None
        self.bias_t = self.bias_full = None
        cols_last = not self.batch and self.output_perm == tuple(range(len(natural)))
        if bias is not None and cols_last and bias.ndim <= len(self.cols):
            col_shape = tuple(self.kernel_sizes[c] for c in self.cols)
            self.bias_t = self.upload(np.broadcast_to(bias, col_shape).reshape(-1), name="bias")
        elif bias is not None:
            self.bias_full = self.upload(bias, name="bias")
        self.fuse_in_matmul = self.fused is not None and self.bias_full is None
        # Stored as load_model's storage_dtype asks (float16: halves, which matmul reads).
        self.kernel = self.upload(kernel, dtype=self.storage_dtype, name="kernel")
        self.built = True

    def call(self, inputs, **kwargs):
        self.compute_output_shape(inputs.shape)

        def compute():
            x = inputs
            if self.input_summed:
                x = reduce.reduce_sum(x, axis=self.input_summed)
            if self.input_perm != tuple(range(len(self.input_perm))):
                x = layout.transpose(x, self.input_perm)
            nb = len(self.batch)
            sizes = dict(zip(self.batch + self.rows + self.contract, x.shape))
            m = math.prod(sizes[c] for c in self.rows)
            k = math.prod(sizes[c] for c in self.contract)
            x = view(x, ((math.prod(x.shape[:nb]),) if nb else ()) + (m, k))
            fn = self.fused if self.fuse_in_matmul else None
            y = matmul.matmul(x, self.kernel, self.bias_t, fn.function if fn else None,
                              fn.params if fn else ())
            natural = tuple(sizes[c] for c in self.batch + self.rows) + \
                tuple(self.kernel_sizes[c] for c in self.cols)
            y = view(y, natural)
            if self.output_perm != tuple(range(len(natural))):
                y = layout.transpose(y, self.output_perm)
            if self.bias_full is not None:
                y = elementwise.add(y, self.bias_full)
            if self.fuse_in_matmul:
                return y
            return activation_functions.apply(y, self.activation, self.keras_major, self.name)
        return ownership.tidy.run(compute)
