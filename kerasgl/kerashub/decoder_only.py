"""The decoder-only models of KerasHub built from GatedDecoder blocks (Llama, Mistral, Gemma):
their shared graph, their causal LM, and their layers as generation uses them.

    token_ids -> token_embedding [* sqrt(hidden_dim): Gemma] -> block_0 .. block_N-1 (with the
      padding mask) -> final RMS norm: the sequence output
    CausalLM: the sequence output -> token_embedding(reverse=True) [soft-capped: Gemma 2]

Each architecture module describes its model with a DecoderOnly (names, the blocks' configs).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..ops import elementwise, embedding_rows
from ..tensors import ownership
from .causal_lm import HubCausalLM
from .files import HubFiles
from .functional import Functional
from .gated_decoder import GatedDecoder
from .generation import DecoderStack
from .hub_layer import gather
from .hub_model import architecture, model_name, options


@dataclass(frozen=True)
class DecoderOnly:
    """What differs between the decoder-only architectures."""
    backbone_options: dict          # hub_model.options' checks of the backbone's config
    block_class: str                # KerasHub's class of the blocks ("LlamaTransformerDecoder")
    block_prefix: str               # their names: block_prefix + index
    mask_keyword: str               # the keyword their call takes the padding mask by
    block_config: Callable          # (hyperparameters, index) -> the block's GatedDecoder config
    final_norm: tuple               # (name, KerasHub class) of the last normalisation
    norm_offset: float = 0.0        # Gemma's norms multiply by 1 + scale
    scale_embeddings: bool = False  # Gemma multiplies the token vectors by sqrt(hidden_dim)
    # Whether the output head is the input embedding's transpose: True, False, or None for
    # what the file holds (one array or two: KerasHub's Llama does not save the option).
    tie_weights: Callable = lambda hp: hp.get("tie_word_embeddings")
    logit_soft_cap: Callable = lambda hp: None


def embedding_scale(hidden_dim: int) -> float:
    """Gemma's sqrt(hidden_dim), as float32 (ops.sqrt of an int, cast to the vectors' dtype)."""
    return float(np.sqrt(np.float32(hidden_dim)))


def backbone_graph(files: HubFiles, net: Functional, arch: DecoderOnly):
    """The backbone's layers and calls in `net`: (sequence output, token_embedding layer)."""
    hp = options(files, files.backbone_config, arch.backbone_options)
    weights, source = files.backbone_weights, files.source
    token_ids = net.input("token_ids", "int32")
    padding_mask = net.input("padding_mask", "int32")
    arrays = weights.layer("token_embedding", source).arrays(source)
    tie = arch.tie_weights(hp)
    token_embedding = net.layer("ReversibleEmbedding", "token_embedding", {
        "input_dim": hp["vocabulary_size"], "output_dim": hp["hidden_dim"],
        "tie_weights": len(arrays) == 1 if tie is None else bool(tie), "mask_zero": False,
        "logit_soft_cap": arch.logit_soft_cap(hp)}, arrays)
    x = net.call(token_embedding, token_ids)
    if arch.scale_embeddings:
        # x * sqrt(hidden_dim), which Keras records as a keras.ops multiply.
        x = net.call(net.layer("Multiply", "multiply", {}, module="keras.src.ops.numpy"), x,
                     embedding_scale(hp["hidden_dim"]))
    for i in range(hp["num_layers"]):
        name = f"{arch.block_prefix}{i}"
        config = arch.block_config(hp, i)
        arrays = gather(weights.layer(name, source), GatedDecoder.weight_paths(config), source)
        x = net.call(net.layer(arch.block_class, name, config, arrays), x,
                     **{arch.mask_keyword: padding_mask})
    norm_name, norm_class = arch.final_norm
    x = net.call(net.layer(norm_class, norm_name, {
        "epsilon": hp.get("layer_norm_epsilon", 1e-6), "offset": arch.norm_offset},
        weights.layer(norm_name, source).arrays(source)), x)
    return x, token_embedding


def causal_lm_graph(files: HubFiles, net: Functional, arch: DecoderOnly):
    sequence_output, token_embedding = backbone_graph(files, net, arch)
    return net.spec([net.call(token_embedding, sequence_output, reverse=True)])


class DecoderOnlyStack(DecoderStack):
    def __init__(self, model, arch: DecoderOnly):
        hp = model.hyperparameters
        self.token_embedding = model.get_layer("token_embedding")
        self.blocks = [model.get_layer(f"{arch.block_prefix}{i}")
                       for i in range(hp["num_layers"])]
        self.final_norm = model.get_layer(arch.final_norm[0])
        attention = self.blocks[0].attention
        self.kv_heads, self.head_dim = attention.kv_heads, attention.depth
        self.vocabulary_size = self.token_embedding.input_dim
        self.scale = embedding_scale(hp["hidden_dim"]) if arch.scale_embeddings else None

    def embed(self, ids, start):
        # The ids were checked against the vocabulary on the CPU: no GPU check to read back.
        def compute():
            tokens = embedding_rows.gather_rows(self.token_embedding.table, ids, check=False)
            return tokens if self.scale is None else elementwise.mul(tokens, self.scale)
        return ownership.tidy.run(compute)

    def logits(self, last):
        return self.token_embedding.call(self.final_norm.call(last), reverse=True)


class DecoderOnlyCausalLM(HubCausalLM):
    """The causal LM of a DecoderOnly architecture (`architecture`, set by its module)."""
    architecture: DecoderOnly

    def decoder_stack(self):
        return DecoderOnlyStack(self, self.architecture)


def register_decoder_only(arch: "DecoderOnly", backbones: tuple, causal_lms: tuple,
                          causal_lm_class: type) -> None:
    """Register a decoder-only family's builders under its KerasHub class names: the backbone's
    graph and the CausalLM's are built the same way for every family, from its DecoderOnly."""
    def backbone(files: HubFiles):
        net = Functional(model_name(files), files.source)
        return net.spec([backbone_graph(files, net, arch)[0]])

    def causal_lm(files: HubFiles):
        return causal_lm_graph(files, Functional(model_name(files), files.source), arch)

    architecture(*backbones)(backbone)
    architecture(*causal_lms, model_class=causal_lm_class)(causal_lm)

