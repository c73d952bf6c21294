"""KerasHub models (keras_hub, formerly keras_nlp) run on kerasgl's layers, without keras_hub.

    model = kg.load_model("gpt2.keras")            # a .keras file or a preset folder
    logits = model.predict({"token_ids": ids, "padding_mask": mask})
    out = model.generate({"token_ids": ids, "padding_mask": mask}, stop_token_ids=None,
                         sampler="greedy")
    text = model.generate("The quick brown", max_length=32)   # a preset with its tokenizer

kg.load_model recognises KerasHub's files (files.py) and hands them here; each architecture
module builds its graph from the saved hyperparameters (hub_model.ARCHITECTURES); a preset's
tokenizer is read from its own files (tokenizer.py). docs/kerashub.md lists what runs.
"""
from __future__ import annotations

import os

from .. import model as _model
from ..errors import ModelFileError
from . import bert, gemma, gpt2, llama, mistral, vit  # noqa: F401  (each registers its architectures)
from .files import read
from .tokenizer import Tokenizer, read as read_tokenizer
from .hub_model import ARCHITECTURES, HubModel, build_model
from .causal_lm import HubCausalLM
from .samplers import (GreedySampler, RandomSampler, Sampler, TopKSampler,  # noqa: F401
                       TopPSampler)


def load(path, task: bool = True) -> HubModel:
    """The KerasHub model at `path` (a `.keras` file or a preset folder); `task=False` loads a
    task preset's backbone alone. ModelFileError when `path` is no KerasHub model."""
    path = _model.model_path(path, "kerashub.load")
    files = read(path, task)
    if files is None:
        raise ModelFileError(f"{path}: not a KerasHub model (no config.json naming a "
                                    "keras_hub class)")
    return build_model(files)


def load_tokenizer(path):
    """The tokenizer saved in the preset folder `path` (tokenizer.json and its assets): ids as
    keras_hub's tokenizer gives them. Needs the kerashub extra (tokenizers, sentencepiece)."""
    found = read_tokenizer(os.fspath(path))
    if found is None:
        raise ModelFileError(f"{path}: no KerasHub tokenizer (tokenizer.json) in the folder")
    return found


def _load_if_kerashub(path: str, storage_dtype: str = "float32"):
    files = read(path) if os.path.exists(path) else None
    return None if files is None else build_model(files, storage_dtype)


_model.MODEL_FORMATS.append(_load_if_kerashub)

__all__ = ["load", "load_tokenizer", "Tokenizer", "ARCHITECTURES", "HubModel", "HubCausalLM", "Sampler", "GreedySampler",
           "RandomSampler", "TopKSampler", "TopPSampler"]
