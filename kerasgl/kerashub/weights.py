"""A KerasHub model's weights as a tree of layers, read from Keras's weights files.

Keras writes a layer's variables under `<group>/vars/0..n` and each sub-layer it holds under a
group named after the attribute holding it (`_self_attention_layer`, `query_dense`), a model's
layers under `layers/<snake_case class name>[_N]`; every `vars` group carries the layer's name.
KerasHub's backbones are such models, so a layer is found by its name among its model's layers,
and a sub-layer by its attribute. Sharded presets (`model.weights.json` and its shards) split one
layer's variables over several files: their trees are merged here into one.

Every group and dataset is read through saving's H5Reader, with its checks (nothing outside the
file, no declared size trusted); the walk is bounded in depth as saving's is.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import h5py
import numpy as np

from ..errors import ModelFileError
from ..saving.h5_safety import H5Reader
from ..saving.keras_zip import LAYERS_GROUPS
from ..saving.limits import MAX_GROUP_DEPTH


@dataclass
class WeightNode:
    """One group of a weights file: a layer (with its own variables), a sub-layer, or a container
    of layers (`layers`). `path` names it in errors."""
    path: str
    name: str | None = None                               # the layer's name (vars@name)
    variables: dict = field(default_factory=dict)         # index -> array
    children: dict = field(default_factory=dict)          # group name -> WeightNode

    def arrays(self, source: str) -> list[np.ndarray]:
        """The layer's own variables in order (vars/0, vars/1, ...)."""
        if sorted(self.variables) != list(range(len(self.variables))):
            raise ModelFileError(f"{source}: the variables of {self.path!r} are numbered "
                                 f"{sorted(self.variables)}, not 0 to {len(self.variables) - 1}")
        return [self.variables[i] for i in range(len(self.variables))]

    def child(self, *names: str) -> "WeightNode | None":
        """The first sub-group found among `names` (spellings of one attribute across versions)."""
        return next((self.children[n] for n in names if n in self.children), None)

    def layers(self) -> list["WeightNode"]:
        """The layers of a model's node, in file order."""
        container = self.child(*LAYERS_GROUPS)
        return list(container.children.values()) if container is not None else []

    def layer(self, name: str, source: str) -> "WeightNode":
        """The layer called `name` among this model's layers."""
        found = [node for node in self.layers() if node.name == name]
        if len(found) != 1:
            named = [node.name for node in self.layers()]
            raise ModelFileError(f"{source}: {'no' if not found else 'several'} weights for layer "
                                 f"{name!r} under {self.path!r} (its layers: {named})")
        return found[0]

    def merge(self, other: "WeightNode", source: str) -> None:
        """Add another shard's part of this group."""
        self.name = self.name or other.name
        for index, array in other.variables.items():
            if index in self.variables:
                raise ModelFileError(f"{source}: {other.path}/vars/{index} is in two shards")
            self.variables[index] = array
        for key, node in other.children.items():
            if key in self.children:
                self.children[key].merge(node, source)
            else:
                self.children[key] = node


def read_tree(reader: H5Reader) -> WeightNode:
    """The whole weights tree of one HDF5 file (the root is the model itself)."""
    return _read_group(reader, reader.f, "", 0)


def _read_group(reader: H5Reader, group, path: str, depth: int) -> WeightNode:
    if depth > MAX_GROUP_DEPTH:
        raise ModelFileError(f"{reader.source}: weights groups nest deeper than "
                             f"{MAX_GROUP_DEPTH} levels under {path!r}")
    reader.enter(group)
    node = WeightNode(path or "/")
    for key in reader.names(group):
        child = reader.node(group, key)
        if child is None:
            raise ModelFileError(f"{reader.source}: {path}/{key} points nowhere")
        if key == "vars":
            node.name = reader.text(child, "name")
            reader.enter(child)
            for index in reader.names(child):
                if not index.isdigit():
                    raise ModelFileError(f"{reader.source}: unexpected variable {index!r} in "
                                         f"{path}/vars")
                node.variables[int(index)] = reader.array(reader.node(child, index),
                                                          f"{path or '/'}")
        elif isinstance(child, h5py.Group):
            node.children[key] = _read_group(reader, child, f"{path}/{key}", depth + 1)
    return node
