"""The normalised model description that `saving/` hands to `model.py`.

Both file dialects (Keras 3 `.keras` / legacy `.h5`, Keras 2 / tf.keras `.h5`, architecture JSON)
are reduced to these plain dataclasses, so nothing past `saving/` ever sees a dialect difference.
No GL here: weights are numpy arrays.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TensorRef:
    """A symbolic tensor: output `tensor_index` of call number `node_index` of layer `layer`."""
    layer: str
    node_index: int = 0
    tensor_index: int = 0


@dataclass
class NodeSpec:
    """One call of a layer. `args` / `kwargs` are nested lists/tuples/dicts whose leaves are
    TensorRef or plain constants (numbers, strings, None), exactly as the layer was called."""
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)


@dataclass
class LayerSpec:
    class_name: str
    name: str
    config: dict                    # normalised layer config (see saving/config.py)
    module: str | None = None       # e.g. "keras.layers" or "keras.src.ops.numpy" (op nodes)
    inbound_nodes: list[NodeSpec] = field(default_factory=list)
    weights: list[np.ndarray] = field(default_factory=list)   # in layer.get_weights() order
    inner: "ModelSpec | None" = None   # for a model nested as a layer
    # Every array the file holds, where `weights` left training-only ones out (Keras 2's
    # BatchNormalization(renorm=True)): what layer.get_weights() returns. None: same as weights.
    file_weights: "list[np.ndarray] | None" = None


@dataclass
class ModelSpec:
    kind: str                       # "Sequential" or "Functional"
    name: str
    layers: list[LayerSpec]
    inputs: list[TensorRef]         # Functional: the model's input tensors; Sequential: [] 
    outputs: list[TensorRef]        # Functional: the model's outputs; Sequential: []
    keras_major: int                # 2 or 3: decides formulas that changed (hard_sigmoid, ...)
    source: str = "<memory>"        # file path, for error messages
    input_shapes: list[Any] = field(default_factory=list)  # batch shapes, None for unknown dims
    input_dtypes: list[str] = field(default_factory=list)
    # Functional models built with dicts: the keys of `inputs` / `outputs`, in their order
    # (Keras flattens dicts by sorted key). None for lists / single tensors.
    input_keys: list[str] | None = None
    output_keys: list[str] | None = None
