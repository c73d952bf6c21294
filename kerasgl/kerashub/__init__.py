"""KerasHub models (keras_hub, formerly keras_nlp) run on kerasgl's layers, without keras_hub.

    model = kg.load_model("gpt2.keras")            # a .keras file or a preset folder
    logits = model.predict({"token_ids": ids, "padding_mask": mask})
    out = model.generate({"token_ids": ids, "padding_mask": mask}, stop_token_ids=None,
                         sampler="greedy")

kg.load_model recognises KerasHub's files (files.py) and hands them here; each architecture
module builds its graph from the saved hyperparameters (hub_model.ARCHITECTURES). docs/kerashub.md
lists what runs.
"""
from __future__ import annotations

import os

from .. import model as _model
from ..errors import ModelFileError
from . import bert, gemma, gpt2, llama, mistral  # noqa: F401  (each registers its architectures)
from .files import read
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


def _load_if_kerashub(path: str):
    files = read(path) if os.path.exists(path) else None
    return None if files is None else build_model(files)


_model.MODEL_FORMATS.append(_load_if_kerashub)

__all__ = ["load", "ARCHITECTURES", "HubModel", "HubCausalLM", "Sampler", "GreedySampler",
           "RandomSampler", "TopKSampler", "TopPSampler"]
