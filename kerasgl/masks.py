"""Keras masks, refused where they would change a result (masking is a later feature).

Keras attaches a mask to the output of `Embedding(mask_zero=True)` (and `Masking`) and carries it
through the layers that support masking; some of those use it (Softmax, GlobalAveragePooling1D,
Maximum/Minimum, RNNs, attention) and would give other numbers than kerasgl, which ignores masks.
So at load we follow each mask through the graph and raise if it reaches a layer that is not
known to ignore it. Being conservative here can refuse a model Keras would run identically, never
the reverse.
"""
from __future__ import annotations

from .errors import UnsupportedLayerError

# Layers whose outputs do not depend on the mask they receive and that pass it on (Keras's
# supports_masking=True without using the mask at inference).
PASS_THROUGH = {
    "InputLayer", "Dense", "EinsumDense", "Activation", "Dropout", "SpatialDropout1D",
    "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise", "GaussianDropout", "AlphaDropout",
    "ActivityRegularization", "ReLU", "LeakyReLU", "PReLU", "ELU", "BatchNormalization",
    "LayerNormalization", "Rescaling", "Normalization", "Add", "Subtract", "Multiply", "Average",
    "Concatenate", "Identity",
}
# Layers that do not support masking: Keras drops the mask there (with a warning), values unchanged.
DROPS = {
    "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "SeparableConv1D",
    "SeparableConv2D", "DepthwiseConv1D", "DepthwiseConv2D", "MaxPooling1D", "MaxPooling2D",
    "AveragePooling1D", "AveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D",
    "GlobalAveragePooling2D", "Flatten", "Reshape", "Permute", "RepeatVector", "ZeroPadding1D",
    "ZeroPadding2D", "Cropping1D", "Cropping2D", "UpSampling1D", "UpSampling2D", "Embedding",
}


def makes_mask(layer) -> bool:
    if layer.class_name == "Masking":
        return True
    return layer.class_name == "Embedding" and bool(layer.config.get("mask_zero"))


def check_masks(graph) -> None:
    """Raise UnsupportedLayerError if a mask reaches a layer that would use it."""
    from .layers.op_nodes import OpNode
    masked = set()          # (layer, node_index) of the calls whose outputs carry a Keras mask
    for node in graph.nodes:
        layer = node.layer
        incoming = [ref for ref in node.refs if (ref.layer, ref.node_index) in masked]
        if incoming and not isinstance(layer, OpNode) and layer.class_name not in PASS_THROUGH:
            if layer.class_name in DROPS:
                continue
            source = incoming[0].layer
            raise UnsupportedLayerError(
                f"Layer '{layer.name}' ({layer.class_name}) receives the mask made by layer "
                f"'{source}' (mask_zero=True or Masking); Keras would use the mask there, and "
                "kerasgl does not support masking yet.")
        if incoming or makes_mask(layer):
            masked.add(node.key)
