"""Recognising a KerasHub model and reading what it is made of: its configs and weights trees.

KerasHub saves a model two ways:
- a `.keras` archive (`model.save(path)`): `config.json` holds the backbone's or the task's
  hyperparameters (`"registered_name": "keras_hub>GPT2Backbone"`, `"keras_nlp>..."` from the
  older package), `model.weights.h5` every weight; a task's backbone is one of its layers;
- a preset folder (`save_to_preset(dir)`): `config.json` (the backbone), `model.weights.h5` or
  the sharded `model.weights.json` and the shards it names, `metadata.json`, and for a task
  `task.json` (+ `task.weights.h5` for weights of its own, such as a classifier's head).
Every member is read with saving/'s bounds and checks (sizes, nesting, nothing outside the file).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import ModelFileError
from ..saving.h5_safety import open_h5_file
from ..saving.json_text import parse_config_json
from ..saving.keras_zip import CONFIG_FILE, METADATA_FILE, WEIGHTS_FILE, weights_from_zip
from ..saving.limits import MAX_CONFIG_BYTES, MAX_METADATA_BYTES, readable_size
from ..saving.zip_archive import KerasZip
from .weights import WeightNode, read_tree

PACKAGES = ("keras_hub", "keras_nlp")            # keras_nlp: KerasHub's name before 0.18
TASK_FILE = "task.json"
TASK_WEIGHTS_FILE = "task.weights.h5"
TOKENIZER_FILE = "tokenizer.json"
PREPROCESSOR_FILE = "preprocessor.json"
SHARDED_WEIGHTS_FILE = "model.weights.json"


@dataclass
class HubFiles:
    """What a KerasHub model is made of, read from its files (no GL)."""
    source: str
    config: dict                      # the model to build: the task's, else the backbone's
    backbone_config: dict
    backbone_weights: WeightNode
    task_weights: WeightNode | None   # the tree holding a task's own layers (None: a backbone)
    metadata: dict
    # A preset folder's text side: the folder when it holds a tokenizer (tokenizer.py reads it),
    # and its CausalLM preprocessor's hyperparameters (preprocessor.json), else None.
    tokenizer_folder: str | None = None
    preprocessor: dict | None = None

    @property
    def class_name(self) -> str:
        return hub_class(self.config)

    @property
    def backbone_class(self) -> str:
        return hub_class(self.backbone_config)


def hub_class(config) -> str | None:
    """The KerasHub class a saved config names ("GPT2Backbone"), or None for anything else."""
    if not isinstance(config, dict):
        return None
    registered = config.get("registered_name")
    if isinstance(registered, str) and registered.split(">")[0] in PACKAGES and ">" in registered:
        return registered.split(">", 1)[1]
    module = config.get("module")
    if isinstance(module, str) and module.split(".")[0] in PACKAGES:
        return config.get("class_name")
    return None


def hyperparameters(config: dict, source: str) -> dict:
    """The `config` dict of a saved KerasHub object."""
    inner = config.get("config")
    if not isinstance(inner, dict):
        raise ModelFileError(f"{source}: the {hub_class(config)} config holds no hyperparameters")
    return inner


def read(path: str, task: bool = True) -> HubFiles | None:
    """The KerasHub model at `path` (a `.keras` file or a preset folder), or None when `path` is
    not one (any other model file, for the Keras readers). `task=False` reads a task preset's
    backbone alone."""
    if os.path.isdir(path):
        return _read_preset(path, task) if _is_preset(path) else None
    if not os.path.isfile(path):
        return None        # a FIFO or device would block: the Keras readers refuse those
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"PK\x03\x04":
                return None
    except OSError:
        return None        # the Keras readers say what is wrong with it
    with KerasZip(path) as archive:
        if CONFIG_FILE not in archive:
            return None
        config = parse_config_json(archive.read(CONFIG_FILE, MAX_CONFIG_BYTES), path, CONFIG_FILE)
        if hub_class(config) is None:
            return None
        metadata = (parse_config_json(archive.read(METADATA_FILE, MAX_METADATA_BYTES), path,
                                      METADATA_FILE) if METADATA_FILE in archive else {})
        with weights_from_zip(archive) as reader:
            root = read_tree(reader)
    backbone = hyperparameters(config, path).get("backbone")
    if hub_class(backbone) is None:          # the file is a backbone
        return HubFiles(path, config, config, root, None, metadata)
    backbone_name = hyperparameters(backbone, path).get("name")
    backbone_weights = root.layer(backbone_name, path)
    if not task:
        return HubFiles(path, backbone, backbone, backbone_weights, None, metadata)
    return HubFiles(path, config, backbone, backbone_weights, root, metadata)


def _is_preset(folder: str) -> bool:
    try:
        return hub_class(_json(folder, CONFIG_FILE, MAX_CONFIG_BYTES)) is not None
    except ModelFileError:
        return False


def _regular(path: str) -> str:
    """`path`, a regular file (a FIFO or device in a preset folder would block the reads)."""
    if not os.path.isfile(path):
        raise ModelFileError(f"{path}: missing, or not a regular file")
    return path


def _json(folder: str, name: str, limit: int):
    path = _regular(os.path.join(folder, name))
    try:
        with open(path, "rb") as f:
            text = f.read(limit + 1)
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot read the file: {exc}") from exc
    if len(text) > limit:
        raise ModelFileError(f"{path}: larger than the {readable_size(limit)} such a file may be")
    return parse_config_json(text, path, name)


def _read_preset(folder: str, task: bool) -> HubFiles:
    backbone = _json(folder, CONFIG_FILE, MAX_CONFIG_BYTES)
    metadata_path = os.path.join(folder, METADATA_FILE)
    metadata = _json(folder, METADATA_FILE, MAX_METADATA_BYTES) \
        if os.path.isfile(metadata_path) else {}
    config, task_weights = backbone, None
    if task and os.path.isfile(os.path.join(folder, TASK_FILE)):
        config = _json(folder, TASK_FILE, MAX_CONFIG_BYTES)
        if hub_class(config) is None:
            raise ModelFileError(f"{os.path.join(folder, TASK_FILE)}: not a KerasHub task")
        if os.path.isfile(os.path.join(folder, TASK_WEIGHTS_FILE)):
            task_weights = _tree(folder, TASK_WEIGHTS_FILE)
        else:
            task_weights = WeightNode("/")     # a task with no weights of its own (CausalLM)
    files = HubFiles(folder, config, backbone, _backbone_tree(folder), task_weights, metadata)
    if os.path.isfile(os.path.join(folder, TOKENIZER_FILE)):
        files.tokenizer_folder = folder
    if task and os.path.isfile(os.path.join(folder, PREPROCESSOR_FILE)):
        preprocessor = _json(folder, PREPROCESSOR_FILE, MAX_CONFIG_BYTES)
        if hub_class(preprocessor) is None:
            raise ModelFileError(f"{os.path.join(folder, PREPROCESSOR_FILE)}: not a KerasHub "
                                 "preprocessor")
        files.preprocessor = hyperparameters(preprocessor, folder)
    return files


def _tree(folder: str, name: str) -> WeightNode:
    path = _regular(os.path.join(folder, name))
    with open_h5_file(path, path) as reader:
        return read_tree(reader)


def _backbone_tree(folder: str) -> WeightNode:
    if os.path.isfile(os.path.join(folder, WEIGHTS_FILE)):
        return _tree(folder, WEIGHTS_FILE)
    if not os.path.isfile(os.path.join(folder, SHARDED_WEIGHTS_FILE)):
        raise ModelFileError(f"{folder}: the preset has neither {WEIGHTS_FILE} nor "
                             f"{SHARDED_WEIGHTS_FILE}")
    index = _json(folder, SHARDED_WEIGHTS_FILE, MAX_CONFIG_BYTES)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise ModelFileError(f"{os.path.join(folder, SHARDED_WEIGHTS_FILE)}: no weight_map")
    shards = []
    for value in weight_map.values():
        for name in value if isinstance(value, list) else [value]:
            # Shards are files of the preset itself: a name with a path in it is refused.
            if not isinstance(name, str) or os.path.basename(name) != name \
                    or name.startswith(".") or not name.endswith(".h5"):
                raise ModelFileError(f"{os.path.join(folder, SHARDED_WEIGHTS_FILE)}: the shard "
                                     f"{name!r} is not a weights file of the preset")
            if name not in shards:
                shards.append(name)
    root = WeightNode("/")
    for name in shards:
        root.merge(_tree(folder, name), os.path.join(folder, name))
    return root
