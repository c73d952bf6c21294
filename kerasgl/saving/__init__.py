"""Keras model files -> ModelSpec (plain dataclasses + numpy weights). No GL, no TensorFlow.

    read_model(path)                         .keras (Keras 3), .h5 (Keras 3 legacy, Keras 2)
    read_architecture_json(text_or_path)     model.to_json() output (no weights)
    load_weights_into(spec, weights_path)    .weights.h5 (Keras 3) or save_weights .h5 (Keras 2)

config.py documents what the normalised ModelSpec guarantees. Damaged and hostile files are
refused with a ModelFileError naming the file (api.py): nothing outside the file is read
(h5_safety.py), no declared size is trusted (limits.py, zip_archive.py, h5_prescan.py) and no
config nests deeper than the readers can walk (json_text.py).
"""
from .api import load_weights_into, read_architecture_json, read_model
from .spec import LayerSpec, ModelSpec, NodeSpec, TensorRef

__all__ = ["read_model", "read_architecture_json", "load_weights_into",
           "ModelSpec", "LayerSpec", "NodeSpec", "TensorRef"]
