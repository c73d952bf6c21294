"""Llama (and Llama 3): keras_hub's LlamaBackbone / Llama3Backbone and their CausalLMs.

LlamaTransformerDecoder blocks (decoder_only.py, gated_decoder.py): RMS norms (LlamaLayerNorm),
rotary embeddings (LlamaRotaryEmbedding, Llama 3.1's frequency smoothing when its four options
are set), grouped-query attention as jax's fused dot_product_attention computes it, a
silu-gated feed-forward; untied input and output embeddings unless tie_word_embeddings.
"""
from __future__ import annotations

import math

from .decoder_only import DecoderOnly, DecoderOnlyCausalLM, register_decoder_only
from .grouped_attention import DOT_PRODUCT_ATTENTION_FILL
from .hub_model import positive

LLAMA3_ROPE = ("rope_frequency_adjustment_factor", "rope_low_freq_factor",
               "rope_high_freq_factor", "rope_pretraining_sequence_length")
OPTIONS = {"vocabulary_size": positive, "num_layers": positive, "num_query_heads": positive,
           "num_key_value_heads": positive, "hidden_dim": positive, "intermediate_dim": positive}


def _block(hp: dict, index: int) -> dict:
    heads = hp["num_query_heads"]
    factors = [hp.get(name) for name in LLAMA3_ROPE]
    rope = {"kind": "llama", "max_wavelength": hp.get("rope_max_wavelength", 10000)}
    if all(f is not None for f in factors):
        rope.update(zip(("frequency_adjustment", "low_freq_factor", "high_freq_factor",
                         "pretraining_length"), factors))
    return {"layout": "llama", "intermediate_dim": hp["intermediate_dim"], "activation": "silu",
            "layer_norm_epsilon": hp.get("layer_norm_epsilon", 1e-6),
            "attention": {"heads": heads, "kv_heads": hp["num_key_value_heads"],
                          "layout": "llama", "rope": rope, "sliding_window": None,
                          "logit_soft_cap": None,
                          "query_scale": 1.0 / math.sqrt(hp["hidden_dim"] // heads),
                          "mask_fill": DOT_PRODUCT_ATTENTION_FILL, "zero_masked": False}}


LLAMA = DecoderOnly(
    backbone_options=OPTIONS,
    block_class="LlamaTransformerDecoder", block_prefix="transformer_layer_",
    mask_keyword="decoder_padding_mask", block_config=_block,
    final_norm=("sequence_output_layernorm", "LlamaLayerNorm"))


class LlamaCausalLM(DecoderOnlyCausalLM):
    architecture = LLAMA


register_decoder_only(LLAMA, ("LlamaBackbone", "Llama3Backbone"), ("LlamaCausalLM", "Llama3CausalLM"), LlamaCausalLM)
