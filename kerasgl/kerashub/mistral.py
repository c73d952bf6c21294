"""Mistral: keras_hub's MistralBackbone and MistralCausalLM.

Llama's blocks (MistralTransformerDecoder) with KerasHub's plain RotaryEmbedding (linear
rope_scaling_factor) and a sliding window: a token attends to the `sliding_window` positions up
to its own; the input and output embeddings are never tied.
"""
from __future__ import annotations

import math

from .decoder_only import DecoderOnly, DecoderOnlyCausalLM, register_decoder_only
from .grouped_attention import DOT_PRODUCT_ATTENTION_FILL
from .hub_model import positive
from .llama import OPTIONS


def _block(hp: dict, index: int) -> dict:
    heads = hp["num_query_heads"]
    window = hp.get("sliding_window", 512)
    return {"layout": "llama", "intermediate_dim": hp["intermediate_dim"], "activation": "silu",
            "layer_norm_epsilon": hp.get("layer_norm_epsilon", 1e-6),
            "attention": {"heads": heads, "kv_heads": hp["num_key_value_heads"],
                          "layout": "llama",
                          "rope": {"kind": "rotary",
                                   "max_wavelength": hp.get("rope_max_wavelength", 10000),
                                   "scaling_factor": hp.get("rope_scaling_factor", 1.0)},
                          "sliding_window": window, "logit_soft_cap": None,
                          "query_scale": 1.0 / math.sqrt(hp["hidden_dim"] // heads),
                          "mask_fill": DOT_PRODUCT_ATTENTION_FILL, "zero_masked": False}}


MISTRAL = DecoderOnly(
    backbone_options={**OPTIONS, "sliding_window": lambda value: value is None or positive(value)},
    block_class="MistralTransformerDecoder", block_prefix="transformer_layer_",
    mask_keyword="decoder_padding_mask", block_config=_block,
    final_norm=("sequence_output_layernorm", "MistralLayerNormalization"),
    tie_weights=lambda hp: False)


class MistralCausalLM(DecoderOnlyCausalLM):
    architecture = MISTRAL


register_decoder_only(MISTRAL, ("MistralBackbone",), ("MistralCausalLM",), MistralCausalLM)
