"""GPT-2: keras_hub's GPT2Backbone and GPT2CausalLM, built as KerasHub builds them.

    token_ids -> token_embedding (ReversibleEmbedding) + position_embedding -> dropout
      -> transformer_layer_0 .. N-1 (TransformerDecoder, normalize_first, gelu tanh,
         layer_norm_epsilon 1e-5, with padding_mask) -> layer_norm: the sequence output
    GPT2CausalLM: the sequence output -> token_embedding(reverse=True): logits
"""
from __future__ import annotations

from ..ops import elementwise, embedding_rows
from .causal_lm import HubCausalLM
from .files import HubFiles
from .functional import Functional
from .generation import DecoderStack
from .hub_layer import gather
from .hub_model import architecture, model_name, options, positive
from .transformer_decoder import TransformerDecoder

BACKBONE_OPTIONS = {"vocabulary_size": positive, "num_layers": positive, "num_heads": positive,
                    "hidden_dim": positive, "intermediate_dim": positive,
                    "max_sequence_length": positive}


def backbone_graph(files: HubFiles, net: Functional):
    """The backbone's layers and calls in `net`: (sequence output, token_embedding layer)."""
    hp = options(files, files.backbone_config, BACKBONE_OPTIONS)
    weights, source = files.backbone_weights, files.source

    def own(name):
        return weights.layer(name, source).arrays(source)
    token_ids = net.input("token_ids", "int32")
    padding_mask = net.input("padding_mask", "int32")
    token_embedding = net.layer("ReversibleEmbedding", "token_embedding", {
        "input_dim": hp["vocabulary_size"], "output_dim": hp["hidden_dim"],
        "tie_weights": True, "mask_zero": False}, own("token_embedding"))
    tokens = net.call(token_embedding, token_ids)
    positions = net.call(net.layer("PositionEmbedding", "position_embedding", {
        "sequence_length": hp["max_sequence_length"]}, own("position_embedding")), tokens)
    x = net.call(net.layer("Add", "embeddings_add", {}), [tokens, positions])
    x = net.call(net.layer("Dropout", "embeddings_dropout", {"rate": hp.get("dropout", 0.1)}), x)
    for i in range(hp["num_layers"]):
        name = f"transformer_layer_{i}"
        config = {"intermediate_dim": hp["intermediate_dim"], "num_heads": hp["num_heads"],
                  "dropout": hp.get("dropout", 0.1), "activation": "gelu_approximate",
                  "layer_norm_epsilon": 1e-5, "normalize_first": True}
        arrays = gather(weights.layer(name, source), TransformerDecoder.weight_paths(config),
                        source)
        x = net.call(net.layer("TransformerDecoder", name, config, arrays), x,
                     decoder_padding_mask=padding_mask)
    x = net.call(net.layer("LayerNormalization", "layer_norm", {"axis": -1, "epsilon": 1e-5},
                           own("layer_norm")), x)
    return x, token_embedding


@architecture("GPT2Backbone")
def gpt2_backbone(files: HubFiles):
    net = Functional(model_name(files), files.source)
    sequence_output, _ = backbone_graph(files, net)
    return net.spec([sequence_output])


class GPT2Stack(DecoderStack):
    """GPT2CausalLM's layers for generation (keras_hub's call_with_cache)."""

    def __init__(self, model):
        get = model.get_layer
        self.token_embedding = get("token_embedding")
        self.position_embedding = get("position_embedding")
        self.blocks = [get(f"transformer_layer_{i}")
                       for i in range(model.hyperparameters["num_layers"])]
        self.final_norm = get("layer_norm")
        attention = self.blocks[0].attention
        self.kv_heads, self.head_dim = attention.num_heads, attention.key_dim
        self.vocabulary_size = self.token_embedding.input_dim
        self.max_positions = self.position_embedding.length

    def embed(self, ids, start):
        # The ids were checked against the vocabulary on the CPU: no GPU check to read back.
        tokens = embedding_rows.gather_rows(self.token_embedding.table, ids, check=False)
        positions = self.position_embedding.rows(start, ids.shape[1])
        return elementwise.add(tokens, positions)

    def logits(self, last):
        return self.token_embedding.call(self.final_norm.call(last), reverse=True)


class GPT2CausalLM(HubCausalLM):
    def decoder_stack(self):
        return GPT2Stack(self)


@architecture("GPT2CausalLM", model_class=GPT2CausalLM)
def gpt2_causal_lm(files: HubFiles):
    net = Functional(model_name(files), files.source)
    sequence_output, token_embedding = backbone_graph(files, net)
    return net.spec([net.call(token_embedding, sequence_output, reverse=True)])
