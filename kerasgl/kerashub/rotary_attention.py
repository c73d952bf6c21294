"""The attention of KerasHub's Llama, Mistral and Gemma decoders: projections without biases,
rotary position embeddings on queries and keys, grouped-query attention (grouped_attention.py),
a causal mask (with a sliding window for Mistral and Gemma 2's local layers), Gemma 2's logit
soft-capping, and a key/value cache of kv_heads heads for generation.

Config: heads, kv_heads, layout ("llama": kernels (hidden, heads, depth), as LlamaAttention's and
MistralAttention's; "gemma": (heads, hidden, depth)), rope (rotary_embedding.py: "rotary" or
"llama", with their options), sliding_window, logit_soft_cap, query_scale, mask_fill and
zero_masked (the masking path of the Keras code it mirrors). Gemma's rope interleaves each
vector's halves after rotating; queries and keys alike, so their dot products, the only use of
them, are those of the plain rotation computed here.
"""
from __future__ import annotations

import numpy as np

from ..ops import attention as attn_ops
from ..ops.rotary import rotary
from ..ops.rows_write import write_rows
from ..tensors import ownership
from ..tensors.tensor import Tensor, tensor, view
from .grouped_attention import band, grouped_attention
from .hub_layer import HubLayer
from .rotary_embedding import (RotaryAngles, llama_inverse_frequencies,
                               rotary_inverse_frequencies)


def _as_dense(layout: str, projection: str):
    """A kernel of the file's layout as a Dense kernel (hidden, heads * depth)."""
    def prepare(kernel):
        kernel = np.asarray(kernel, np.float32)
        if projection == "output":                    # (heads, depth, hidden)
            return kernel.reshape(-1, kernel.shape[-1])
        if layout == "gemma":                          # (heads, hidden, depth)
            kernel = kernel.transpose(1, 0, 2)
        return kernel.reshape(kernel.shape[0], -1)
    return prepare


class RotaryAttention(HubLayer):
    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.heads, self.kv_heads = int(self.option("heads")), int(self.option("kv_heads"))
        if self.kv_heads <= 0 or self.heads % self.kv_heads:
            raise self.unsupported(f"{self.heads} query heads over {self.kv_heads} key/value "
                                   "heads (not a multiple)")
        layout = self.option("layout", "llama")
        query_kernel = np.asarray(self.weights_np[0])
        self.depth = query_kernel.shape[-1]
        self.hidden = query_kernel.shape[1 if layout == "gemma" else 0]
        for name, heads in (("query", self.heads), ("key", self.kv_heads),
                            ("value", self.kv_heads)):
            setattr(self, name, self.part("Dense", name, {
                "units": heads * self.depth, "use_bias": False, "activation": "linear"}, 1,
                prepare=_as_dense(layout, name)))
        self.output = self.part("Dense", "attention_output", {
            "units": self.hidden, "use_bias": False, "activation": "linear"}, 1,
            prepare=_as_dense(layout, "output"))
        self.check_all_taken()
        rope = dict(self.option("rope"))
        if rope.pop("kind") == "llama":
            inverse = llama_inverse_frequencies(self.depth, **rope)
        else:
            inverse = rotary_inverse_frequencies(self.depth, **rope)
        self.angles = RotaryAngles(inverse)
        window = self.option("sliding_window")
        self.window = None if window is None else int(window)
        cap = self.option("logit_soft_cap")
        self.soft_cap = None if cap is None else float(cap)
        self.scale = float(self.option("query_scale"))
        self.fill = float(self.option("mask_fill"))
        self.zero_masked = bool(self.option("zero_masked"))

    @property
    def shaders(self):
        return ("matmul.comp", "rotary.comp", "attention_softmax.comp",
                "attention_combine.comp", "transpose.comp", "rows_write.comp")

    def build(self, input_shape):
        shape = tuple(input_shape)
        for layer in (self.query, self.key, self.value):
            layer.build(shape)
        self.output.build(shape[:-1] + (self.heads * self.depth,))
        self.finish_build()

    # The helpers below run inside the caller's tidy scope (call, call_with_cache), which frees
    # every tensor they make but the result.
    def _projections(self, x: Tensor, first: int):
        """Queries and keys rotated for positions first.., and values: (batch, T, heads, depth)."""
        batch, tokens, _ = x.shape
        cos, sin = self.angles.upload(first, tokens)
        out = []
        for layer, heads, rotate in ((self.query, self.heads, True),
                                     (self.key, self.kv_heads, True),
                                     (self.value, self.kv_heads, False)):
            y = view(layer.call(x), (batch, tokens, heads, self.depth))
            out.append(rotary(y, cos, sin) if rotate else y)
        return out

    def _attend(self, q, k, v, mask) -> Tensor:
        out = grouped_attention(q, k, v, scale=self.scale, mask=mask, fill=self.fill,
                                zero_masked=self.zero_masked, soft_cap=self.soft_cap)
        batch, tokens = q.shape[:2]
        return self.output.call(view(out, (batch, tokens, self.heads * self.depth)))

    def _band(self, tokens: int) -> Tensor:
        """The causal (and windowed) mask of a sequence starting at position 0, folded."""
        groups = self.heads // self.kv_heads
        mask = tensor(band(0, tokens, tokens, groups, self.window), label="attention band")
        return view(mask, (1, 1, tokens * groups, tokens))

    def call(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """Self-attention over a whole sequence (predict); padding_mask (batch, S): 1 keeps."""
        def compute():
            q, k, v = self._projections(x, 0)
            mask = self._band(x.shape[1])
            if padding_mask is not None:
                batch, slots = padding_mask.shape
                keys = view(padding_mask, (batch, 1, 1, slots))
                mask = attn_ops.mask_and(keys, mask, (batch, 1) + mask.shape[2:])
            return self._attend(q, k, v, mask)
        return ownership.tidy.run(compute)

    def call_with_cache(self, x: Tensor, key_cache: Tensor, value_cache: Tensor, start: int,
                        valid: Tensor | None) -> Tensor:
        """Tokens at positions start..: the prompt (start 0, attending to itself causally) or
        one token (attending to the cache's `valid` slots, (1, slots))."""
        def compute():
            q, k, v = self._projections(x, start)
            write_rows(key_cache, k, start)
            write_rows(value_cache, v, start)
            if start == 0:
                return self._attend(q, k, v, self._band(x.shape[1]))
            slots = view(valid, (1, 1, 1, valid.shape[-1]))
            return self._attend(q, key_cache, value_cache, slots)
        return ownership.tidy.run(compute)
