"""The models holding GPU memory: for kg.memory().models, kg.live_models() and leak reports.

A model enters this registry when it is made (kerasgl/model.py) and is held here only weakly, so
that dropping the last reference to a model is seen: an undisposed model's __del__ warns
(ResourceWarning, as Python warns for an unclosed file) and hands its weight tensors here, so that
a leak report can say whose they were. Nothing here frees anything: GPU memory is freed by
dispose() alone, never by the garbage collector (ownership.py).

Models are known by duck type (`name`, `source`, `is_disposed`, `gpu_bytes`, `_gpu_tensors()`),
so that this module needs nothing above tensors/.
"""
from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelUsage:
    """One loaded, undisposed model in kg.memory().models."""
    name: str
    source: str          # the file it was loaded from
    bytes: int           # GPU bytes it holds: its weights as uploaded, and its execution plans


_models: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()
_order = itertools.count()
# Models whose Python object went away undisposed: (name, source, their weight tensors). The
# tensors are leaked for good (nothing refers to them but ownership's list of live tensors);
# an entry is forgotten once all its tensors are disposed (kerasgl.testing frees leaked tensors).
_dropped: list[tuple[str, str, list]] = []


def register(model) -> None:
    """Called once by every new model."""
    _models[next(_order)] = model


def live_models() -> list:
    """The models whose weights are on the GPU (made and not yet disposed), oldest first."""
    return [m for m in list(_models.values()) if not m.is_disposed]


def usages() -> tuple:
    return tuple(ModelUsage(m.name, m.source, m.gpu_bytes) for m in live_models())


def dropped(name: str, source: str, tensors) -> None:
    """A model was garbage-collected without dispose(): remember whose `tensors` these are."""
    tensors = [t for t in tensors if not t.is_disposed]
    if tensors:
        _dropped.append((name, source, tensors))


def dropped_models() -> list[tuple[str, str, list]]:
    """(name, source, still-live tensors) of the models dropped undisposed whose memory is still
    held."""
    kept = []
    for name, source, tensors in _dropped:
        live = [t for t in tensors if not t.is_disposed]
        if live:
            kept.append((name, source, live))
    _dropped[:] = kept
    return list(kept)


def report_lines(live_tensor_ids: set) -> list[str]:
    """The leak report's lines about models: which live tensors are a model's weights."""
    lines = []
    for model in live_models():
        mine = [t for t in model._gpu_tensors() if id(t) in live_tensor_ids]
        lines.append(f"  model '{model.name}' ({model.source}) is not disposed: {len(mine)} of "
                     f"these tensor(s) are its weights; {model.gpu_bytes:,} bytes on the GPU "
                     "(call model.dispose(), or load it in a `with` block)")
    for name, source, tensors in dropped_models():
        mine = [t for t in tensors if id(t) in live_tensor_ids]
        if mine:
            nbytes = sum(t.nbytes for t in mine)
            lines.append(f"  model '{name}' ({source}) was dropped without dispose(): {len(mine)} "
                         f"of these tensor(s), {nbytes:,} bytes, were its weights and stay on the "
                         "GPU until the process ends")
    return lines
