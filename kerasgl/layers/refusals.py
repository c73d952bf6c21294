"""Keras classes and keras.ops operations kerasgl refuses on purpose, each with the reason.

A refusal is a fact about the class, declared once next to the family it belongs to
(`refuse_ops({...})` / `refuse_layers({...})` in that family's module), so that the load error
says *why* and docs/layers.md (scripts/list_layers.py) lists every refusal with its reason.
An operation neither implemented nor listed here is refused too, as "not supported".
"""
from __future__ import annotations

REFUSED_OPS: dict[str, str] = {}
REFUSED_LAYERS: dict[str, str] = {}


def _add(table: dict, reasons: dict) -> None:
    for name, reason in reasons.items():
        if name in table and table[name] != reason:
            raise ValueError(f"{name} is refused twice, for different reasons")
        table[name] = reason


def refuse_ops(reasons: dict[str, str]) -> None:
    """keras.ops operation class name -> why kerasgl does not run it (a sentence fragment)."""
    _add(REFUSED_OPS, reasons)


def refuse_layers(reasons: dict[str, str]) -> None:
    """Keras layer class name -> why kerasgl does not run it (a sentence fragment)."""
    _add(REFUSED_LAYERS, reasons)
