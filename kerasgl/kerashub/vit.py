"""ViT: keras_hub's ViTBackbone and ViTImageClassifier, built as KerasHub builds them.

    images (batch, height, width, channels) -> patch_embedding (Conv2D, kernel and stride the
      patch size) -> (batch, patches, hidden) -> class token first (ClassToken)
      -> + position_embedding -> transformer_block_1 .. N (ViTEncoderBlock: pre-norm, exact
      GELU) -> ln (LayerNormalization): the sequence output
    ViTImageClassifier: the first token ("token" pooling) or the mean of all ("gap")
      -> pre_logits (Dense, tanh, when intermediate_dim is set) -> dropout
      -> predictions (Dense, num_classes, its activation)
"""
from __future__ import annotations

from ..errors import ModelFileError
from .files import HubFiles
from .functional import Functional
from .hub_layer import gather
from .hub_model import architecture, model_name, options, positive
from .vit_layers import ViTEncoderBlock


def _true(value) -> bool:
    """An option kerasgl supports only on (absent from a config: KerasHub's default, on)."""
    return value is True or value is None


BACKBONE_OPTIONS = {"num_layers": positive, "num_heads": positive, "hidden_dim": positive,
                    "mlp_dim": positive, "use_mha_bias": _true, "use_mlp_bias": _true,
                    "use_class_token": _true, "use_patch_bias": _true,
                    "data_format": ("channels_last", None)}
CLASSIFIER_OPTIONS = {"num_classes": positive, "pooling": ("token", "gap", None)}


def _block(weights, name: str, source: str):
    """The encoder block called `name` (its groups are numbered by class, not by name)."""
    container = weights.child("encoder_layers")
    found = [node for node in (container.children.values() if container else ())
             if node.name == name]
    if len(found) != 1:
        raise ModelFileError(f"{source}: no weights for the ViT encoder block {name!r}")
    return found[0]


def backbone_graph(files: HubFiles, net: Functional):
    """The backbone's layers and calls in `net`: the sequence output."""
    hp = options(files, files.backbone_config, BACKBONE_OPTIONS)
    weights, source = files.backbone_weights, files.source
    height, width, channels = hp["image_shape"]
    patch = hp["patch_size"]
    patch = (patch, patch) if isinstance(patch, int) else tuple(patch)
    hidden, epsilon = hp["hidden_dim"], hp.get("layer_norm_epsilon", 1e-6)
    embedding = weights.layer("vit_patching_and_embedding", source)
    encoder = weights.layer("vit_encoder", source)

    images = net.input("images", "float32", (None, height, width, channels))
    x = net.call(net.layer("Conv2D", "patch_embedding", {
        "filters": hidden, "kernel_size": list(patch), "strides": list(patch),
        "padding": "valid", "data_format": "channels_last", "use_bias": True,
        "activation": "linear"}, embedding.child("patch_embedding").arrays(source)), images)
    patches = (height // patch[0]) * (width // patch[1])
    x = net.call(net.layer("Reshape", "patches", {"target_shape": [patches, hidden]}), x)
    x = net.call(net.layer("ClassToken", "class_token", {}, embedding.arrays(source)), x)
    positions = net.call(net.layer("PositionEmbedding", "position_embedding", {
        "sequence_length": patches + 1},
        embedding.child("position_embedding").arrays(source)), x)
    x = net.call(net.layer("Add", "embeddings_add", {}), [x, positions])
    for i in range(1, hp["num_layers"] + 1):
        name = f"transformer_block_{i}"
        config = {"intermediate_dim": hp["mlp_dim"], "num_heads": hp["num_heads"],
                  "dropout": hp.get("attention_dropout", 0.0), "activation": "gelu",
                  "layer_norm_epsilon": epsilon, "normalize_first": True}
        arrays = gather(_block(encoder, name, source), ViTEncoderBlock.weight_paths(config),
                        source)
        x = net.call(net.layer("ViTEncoderBlock", name, config, arrays), x)
    norm = encoder.child("layer_norm")
    if norm is None:
        raise ModelFileError(f"{source}: no weights for the ViT encoder's final norm")
    return net.call(net.layer("LayerNormalization", "ln", {"axis": -1, "epsilon": epsilon},
                              norm.arrays(source)), x)


@architecture("ViTBackbone")
def vit_backbone(files: HubFiles):
    net = Functional(model_name(files), files.source)
    return net.spec([backbone_graph(files, net)])


@architecture("ViTImageClassifier")
def vit_image_classifier(files: HubFiles):
    hp = options(files, files.config, CLASSIFIER_OPTIONS)
    net = Functional(model_name(files), files.source)
    x = backbone_graph(files, net)
    head = files.task_weights

    def own(name):
        return head.layer(name, files.source).arrays(files.source)
    if (hp.get("pooling") or "token") == "token":
        # x[:, 0], recorded by Keras as a GetItem operation.
        x = net.call(net.layer("GetItem", "get_item", {}, module="keras.src.ops.numpy"),
                     x, [slice(None), 0])
    else:
        x = net.call(net.layer("GlobalAveragePooling1D", "gap",
                               {"data_format": "channels_last"}), x)
    if hp.get("intermediate_dim") is not None:
        x = net.call(net.layer("Dense", "pre_logits", {
            "units": hp["intermediate_dim"], "activation": "tanh"}, own("pre_logits")), x)
    x = net.call(net.layer("Dropout", "output_dropout", {"rate": hp.get("dropout", 0.0)}), x)
    return net.spec([net.call(net.layer("Dense", "predictions", {
        "units": hp["num_classes"], "activation": hp.get("activation") or "linear"},
        own("predictions")), x)])
