"""What reading a file needs to know about a Keras layer class, asked by class name: how many
weight arrays a config implies, the Keras 2 spellings of its options, and which arrays only
training reads.

Those facts belong to the layer classes (kerasgl/layers/base.py: `Layer.weight_count`,
`normalize_keras2_config`, `inference_weights`, with their defaults there), yet saving/ sits
below layers/ and imports nothing of them. The answers travel one way: kerasgl/layers keeps them
by class name (base.FILE_RULES, filled as each class registers), and the top of the package, the
one place allowed to see both, hands that mapping to `install` at import (kerasgl/model.py), before
anything can read a file. saving/ then only ever calls the three methods of `LayerRules`. A class
name nobody declared (one kerasgl refuses when the graph is built, with its reasons), or any name
before `install`, gets the defaults: no count check, the config as written, every array kept.
"""
from __future__ import annotations

from typing import Mapping, Protocol


class LayerRules(Protocol):
    def weight_count(self, config: dict) -> int | None: ...

    def normalize_keras2_config(self, config: dict) -> dict: ...

    def inference_weights(self, config: dict, weights: list) -> list: ...


class _Undeclared:
    """The rules of a class name nobody declared."""

    @staticmethod
    def weight_count(config: dict) -> None:
        return None

    @staticmethod
    def normalize_keras2_config(config: dict) -> dict:
        return config

    @staticmethod
    def inference_weights(config: dict, weights: list) -> list:
        return weights


_installed: list[Mapping[str, LayerRules]] = [{}]


def install(rules: Mapping[str, LayerRules]) -> None:
    """Answer by class name from `rules` (a live mapping: names declared later count too)."""
    _installed[0] = rules


def rules_for(class_name: str) -> LayerRules:
    return _installed[0].get(class_name, _Undeclared)


def saved_class_name(class_name: str) -> str:
    """The Python class name Keras names a layer's weights group after in a .keras file (the
    config's class_name is the exported name, which can differ: GroupQueryAttention)."""
    return getattr(rules_for(class_name), "python_class_name", None) or class_name


def expected_weight_count(class_name: str, config: dict) -> int | None:
    """How many weight arrays a layer of this class and config has; None: no check."""
    if not isinstance(config, dict):
        return None
    return rules_for(class_name).weight_count(config)
