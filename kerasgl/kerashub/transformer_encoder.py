"""keras_hub.layers.TransformerEncoder: self-attention over the whole sequence taking
`padding_mask`, then the feed-forward (transformer_block.py). Keras makes its feed-forward's
layer normalisation before its Dense layers: the order of its weights."""
from __future__ import annotations

from .transformer_block import TransformerBlock


class TransformerEncoder(TransformerBlock):
    ORDER = ("attention", "attention_norm", "feedforward_norm", "intermediate", "output")
    attention_name = "self_attention_layer"

    def compute_output_shape(self, inputs, padding_mask=None):
        return self.block_shape(inputs, padding_mask)

    def build(self, inputs, padding_mask=None):
        self.build_parts(inputs)

    def call(self, inputs, padding_mask=None, **kwargs):
        return self.run(inputs, padding_mask)
