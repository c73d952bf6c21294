"""The base of this package's layers: KerasHub layers made of kerasgl's own.

A KerasHub layer such as TransformerDecoder holds Keras layers (LayerNormalization, Dense, a
MultiHeadAttention); here it holds the kerasgl layers of the same classes, made from the
arrays its weights file keeps for each (`weight_paths` says where), so each computes what
its Keras counterpart does, with its kernels, checks and fusions. The layer's own arrays (its
spec's weights) are the concatenation of its sub-layers', in Keras's get_weights() order.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFileError
from ..layers import LAYER_CLASSES
from ..layers.base import Layer
from ..saving.spec import LayerSpec
from .weights import WeightNode


def gather(node: WeightNode, paths, source: str) -> list[np.ndarray]:
    """The arrays of the groups at `paths` under `node`, in that order. A path is a tuple of
    levels, each the spellings one attribute has had across versions (`("query_dense",
    "_query_dense")`); the empty path is the node's own variables."""
    arrays = []
    for path in paths:
        current = node
        for level in path:
            found = current.child(*level)
            if found is None:
                raise ModelFileError(f"{source}: no weights group {' or '.join(level)} under "
                                     f"{current.path!r}")
            current = found
        arrays += current.arrays(source)
    return arrays


def sublayer(owner: Layer, kind, name: str, config: dict, weights: list) -> Layer:
    """A layer inside `owner` (errors name both): `kind` is a Keras class name (kerasgl's layer
    for it) or a layer class of this package."""
    cls = LAYER_CLASSES[kind] if isinstance(kind, str) else kind
    class_name = kind if isinstance(kind, str) else kind.__name__
    spec = LayerSpec(class_name, f"{owner.name}/{name}",
                     {"name": name, "trainable": True, "dtype": "float32", **config},
                     weights=list(weights))
    return cls(spec, owner.keras_major)


class HubLayer(Layer):
    """A KerasHub layer built from kerasgl layers (`self.parts`, in get_weights() order)."""
    @classmethod
    def weight_paths(cls, config: dict) -> tuple:
        """Where the layer's arrays live in the weights file, in get_weights() order: paths for
        `gather`, for this configuration."""
        raise NotImplementedError

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.parts: list[Layer] = []
        self._taken = 0                  # arrays handed to sub-layers so far

    def take(self, count: int) -> list:
        """The next `count` of the layer's arrays, for the next sub-layer made."""
        taken = self.weights_np[self._taken:self._taken + count]
        self._taken += count
        if len(taken) != count:
            raise ModelFileError(f"Layer '{self.name}' ({self.class_name}) has "
                                 f"{len(self.weights_np)} weight arrays, fewer than its "
                                 "configuration needs.")
        return taken

    def part(self, kind, name: str, config: dict, count: int, prepare=None) -> Layer:
        """Make the next sub-layer (`kind` as for `sublayer`), with the next `count` arrays,
        each passed through `prepare` first when the kerasgl layer wants them in another layout
        than the file's (an attention kernel of (heads, hidden, depth) as a Dense's)."""
        arrays = self.take(count)
        if prepare is not None:
            arrays = [prepare(a) for a in arrays]
        layer = sublayer(self, kind, name, config, arrays)
        self.parts.append(layer)
        return layer

    def check_all_taken(self) -> None:
        if self._taken != len(self.weights_np):
            raise ModelFileError(f"Layer '{self.name}' ({self.class_name}) has "
                                 f"{len(self.weights_np)} weight arrays; its configuration "
                                 f"takes {self._taken}.")

    def finish_build(self) -> None:
        """Call at the end of build: the layer reports its parts' GPU weights as its own (a
        model's summary and memory reports read each layer's list)."""
        self._gpu_weights = [w for layer in self.parts for w in layer.gpu_weights()]
        self.built = True

    def gpu_weights(self) -> list:
        return [w for w in self._gpu_weights if not w.is_disposed]

    @property
    def shaders(self):
        names = []
        for layer in self.parts:
            names.extend(s for s in layer.shaders if s not in names)
        return tuple(names)

    def dispose(self) -> None:
        for layer in self.parts:
            layer.dispose()
        super().dispose()
