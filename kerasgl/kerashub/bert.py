"""BERT: keras_hub's BertBackbone and BertTextClassifier, built as KerasHub builds them.

    token_embedding(token_ids) + position_embedding + segment_embedding(segment_ids)
      -> embeddings_layer_norm (1e-12) -> dropout
      -> transformer_layer_0 .. N-1 (TransformerEncoder, post-norm, gelu tanh, with padding_mask)
      = sequence_output;  pooled_dense (tanh) of its first token = pooled_output
    BertTextClassifier: pooled_output -> dropout -> logits (Dense, num_classes, its activation)
"""
from __future__ import annotations

from .files import HubFiles
from .functional import Functional
from .hub_layer import gather
from .hub_model import architecture, model_name, options, positive
from .transformer_encoder import TransformerEncoder

BACKBONE_OPTIONS = {"vocabulary_size": positive, "num_layers": positive, "num_heads": positive,
                    "hidden_dim": positive, "intermediate_dim": positive,
                    "max_sequence_length": positive, "num_segments": positive}
CLASSIFIER_OPTIONS = {"num_classes": positive}


def backbone_graph(files: HubFiles, net: Functional) -> dict:
    """The backbone's layers and calls in `net`: {"sequence_output", "pooled_output"}."""
    hp = options(files, files.backbone_config, BACKBONE_OPTIONS)
    weights, source = files.backbone_weights, files.source
    dropout = hp.get("dropout", 0.1)

    def own(name):
        return weights.layer(name, source).arrays(source)
    padding_mask = net.input("padding_mask", "int32")
    segment_ids = net.input("segment_ids", "int32")
    token_ids = net.input("token_ids", "int32")
    tokens = net.call(net.layer("ReversibleEmbedding", "token_embedding", {
        "input_dim": hp["vocabulary_size"], "output_dim": hp["hidden_dim"],
        "tie_weights": True, "mask_zero": False}, own("token_embedding")), token_ids)
    positions = net.call(net.layer("PositionEmbedding", "position_embedding", {
        "sequence_length": hp["max_sequence_length"]}, own("position_embedding")), tokens)
    segments = net.call(net.layer("Embedding", "segment_embedding", {
        "input_dim": hp["num_segments"], "output_dim": hp["hidden_dim"], "mask_zero": False},
        own("segment_embedding")), segment_ids)
    x = net.call(net.layer("Add", "embeddings_add", {}), [tokens, positions, segments])
    x = net.call(net.layer("LayerNormalization", "embeddings_layer_norm",
                           {"axis": -1, "epsilon": 1e-12}, own("embeddings_layer_norm")), x)
    x = net.call(net.layer("Dropout", "embeddings_dropout", {"rate": dropout}), x)
    for i in range(hp["num_layers"]):
        name = f"transformer_layer_{i}"
        config = {"intermediate_dim": hp["intermediate_dim"], "num_heads": hp["num_heads"],
                  "dropout": dropout, "activation": "gelu_approximate",
                  "layer_norm_epsilon": 1e-12, "normalize_first": False}
        arrays = gather(weights.layer(name, source), TransformerEncoder.weight_paths(config),
                        source)
        x = net.call(net.layer("TransformerEncoder", name, config, arrays), x,
                     padding_mask=padding_mask)
    # x[:, 0, :], recorded by Keras as a GetItem operation.
    first = net.call(net.layer("GetItem", "get_item", {}, module="keras.src.ops.numpy"),
                     x, [slice(None), 0, slice(None)])
    pooled = net.call(net.layer("Dense", "pooled_dense", {
        "units": hp["hidden_dim"], "activation": "tanh"}, own("pooled_dense")), first)
    return {"sequence_output": x, "pooled_output": pooled}


@architecture("BertBackbone")
def bert_backbone(files: HubFiles):
    net = Functional(model_name(files), files.source)
    return net.spec(backbone_graph(files, net))


@architecture("BertTextClassifier")
def bert_text_classifier(files: HubFiles):
    hp = options(files, files.config, CLASSIFIER_OPTIONS)
    net = Functional(model_name(files), files.source)
    pooled = backbone_graph(files, net)["pooled_output"]
    pooled = net.call(net.layer("Dropout", "classifier_dropout",
                                {"rate": hp.get("dropout", 0.1)}), pooled)
    logits = net.layer("Dense", "logits", {"units": hp["num_classes"],
                                           "activation": hp.get("activation") or "linear"},
                       files.task_weights.layer("logits", files.source).arrays(files.source))
    return net.spec([net.call(logits, pooled)])
