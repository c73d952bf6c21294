"""keras_hub's CachedMultiHeadAttention: MultiHeadAttention that can keep its keys and values.

Without a cache it is kerasgl's MultiHeadAttention (every option and masking path of Keras's).
With one (`call_with_cache`), the keys and values of the tokens it is given are written into the
cache tensors in place (ops/rows_write.py), and the queries attend:
- at start 0 (the prompt, processed in one pass): to the prompt itself, causally, as KerasHub's
  `_build_cache` does (no padding mask: a shorter prompt's padding comes after its tokens);
- at start > 0 (one new token): to every cache slot marked in `valid` (1 for the slots written
  so far, 0 after), which is KerasHub's causal mask of a cached step.
The score and weighted-sum kernels are MultiHeadAttention's, with its masking path.
"""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..layers.attention.multi_head_attention import MultiHeadAttention
from ..ops import attention as attn_ops
from ..ops.rows_write import write_rows
from ..tensors import ownership
from ..tensors.tensor import Tensor, view


class CachedMultiHeadAttention(MultiHeadAttention):
    shaders = MultiHeadAttention.shaders + ("rows_write.comp",)

    def call_with_cache(self, x: Tensor, key_cache: Tensor, value_cache: Tensor, start: int,
                        valid: Tensor | None) -> Tensor:
        """Self-attention of x (batch, tokens, features) at positions start.. of the cache
        (batch, slots, heads, head_dim); `valid`: (1, slots) 0 / 1, for start > 0."""
        batch, tokens = x.shape[:2]
        if start > 0 and (tokens != 1 or valid is None):
            raise ShapeError(f"Layer '{self.name}': a cached step takes one token and the valid "
                             f"slots. Received {tokens} tokens at position {start}.")

        def compute():
            q = self._project("query", x, self.key_dim)
            k = self._project("key", x, self.key_dim)
            v = self._project("value", x, self.value_dim)
            write_rows(key_cache, k, start)
            write_rows(value_cache, v, start)
            mode = self._mask_mode(3, False)
            scale = 1.0 / math.sqrt(float(self.key_dim))
            if start == 0:
                weights = attn_ops.attention_weights(q, k, scale=scale, causal=True, **mode)
                keys_values = v
            else:
                slots = view(valid, (1, 1, 1, valid.shape[-1]))
                weights = attn_ops.attention_weights(q, key_cache, scale=scale, mask=slots,
                                                     **mode)
                keys_values = value_cache
            return self._output_projection(attn_ops.attention_combine(weights, keys_values))
        return ownership.tidy.run(compute)
