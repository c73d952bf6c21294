"""Gemma (1 and 2): keras_hub's GemmaBackbone and GemmaCausalLM.

Token vectors times sqrt(hidden_dim); GemmaDecoderBlocks (gated_decoder.py, "gemma" layout):
RMS norms times 1 + scale, rotary embeddings (wavelength 10000), grouped-query attention with
queries scaled by 1/sqrt(head_dim) and keras's Softmax-layer masking, a tanh-GELU-gated
feed-forward of intermediate_dim / 2. Gemma 2's options: post-attention and post-feed-forward
norms, attention and final logit soft-capping, and a sliding window on every other block (the
even ones).
"""
from __future__ import annotations

import numpy as np

from .decoder_only import DecoderOnly, DecoderOnlyCausalLM, register_decoder_only
from .grouped_attention import SOFTMAX_LAYER_FILL
from .hub_model import positive

OPTIONS = {"vocabulary_size": positive, "num_layers": positive, "num_query_heads": positive,
           "num_key_value_heads": positive, "hidden_dim": positive, "intermediate_dim": positive,
           "head_dim": positive}


def _block(hp: dict, index: int) -> dict:
    heads, head_dim = hp["num_query_heads"], hp["head_dim"]
    windowed = hp.get("use_sliding_window_attention", False) and index % 2 == 0
    return {"layout": "gemma", "intermediate_dim": hp["intermediate_dim"] // 2,
            "activation": "gelu_approximate", "layer_norm_epsilon": 1e-6, "norm_offset": 1.0,
            "post_attention_norm": hp.get("use_post_attention_norm", False),
            "post_ffw_norm": hp.get("use_post_ffw_norm", False),
            "attention": {"heads": heads, "kv_heads": hp["num_key_value_heads"],
                          "layout": "gemma",
                          "rope": {"kind": "rotary", "max_wavelength": 10000.0},
                          "sliding_window": hp.get("sliding_window_size", 4096) if windowed
                          else None,
                          "logit_soft_cap": hp.get("attention_logit_soft_cap"),
                          # KerasHub's GemmaDecoderBlock makes its attention with
                          # query_head_dim_normalize=True whatever the backbone's option says.
                          "query_scale": float(np.float32(1 / np.sqrt(head_dim))),
                          "mask_fill": SOFTMAX_LAYER_FILL, "zero_masked": True}}


GEMMA = DecoderOnly(
    backbone_options=OPTIONS, block_class="GemmaDecoderBlock", block_prefix="decoder_block_",
    mask_keyword="padding_mask", block_config=_block,
    final_norm=("final_normalization", "RMSNormalization"), norm_offset=1.0,
    scale_embeddings=True, tie_weights=lambda hp: True,
    logit_soft_cap=lambda hp: hp.get("final_logit_soft_cap"))


class GemmaCausalLM(DecoderOnlyCausalLM):
    architecture = GEMMA


register_decoder_only(GEMMA, ("GemmaBackbone",), ("GemmaCausalLM",), GemmaCausalLM)
