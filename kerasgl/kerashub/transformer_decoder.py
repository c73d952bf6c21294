"""keras_hub.layers.TransformerDecoder without cross-attention (decoder-only models: GPT-2):
causal self-attention taking `decoder_padding_mask` (transformer_block.py), and the same block
for generation, `call_with_cache`, whose attention keeps its keys and values in a cache
(cached_attention.py)."""
from __future__ import annotations

from ..tensors import ownership
from ..tensors.tensor import Tensor
from .cached_attention import CachedMultiHeadAttention
from .transformer_block import TransformerBlock


class TransformerDecoder(TransformerBlock):
    ORDER = ("attention", "attention_norm", "intermediate", "output", "feedforward_norm")
    attention_class = CachedMultiHeadAttention
    causal = True

    def compute_output_shape(self, decoder_sequence, decoder_padding_mask=None):
        return self.block_shape(decoder_sequence, decoder_padding_mask)

    def build(self, decoder_sequence, decoder_padding_mask=None):
        self.build_parts(decoder_sequence)

    def call(self, decoder_sequence, decoder_padding_mask=None, **kwargs):
        return self.run(decoder_sequence, decoder_padding_mask)

    def call_with_cache(self, x: Tensor, key_cache: Tensor, value_cache: Tensor, start: int,
                        valid: Tensor | None) -> Tensor:
        """The block on tokens at positions start.. (generation; cached_attention.py)."""
        return ownership.tidy.run(self.residual_branches, x, lambda h: (
            self.attention.call_with_cache(h, key_cache, value_cache, start, valid)))
