"""Recording GPU actions: how an execution plan (kerasgl/plans/) learns what a predict call did.

While a recorder is active, every GPU action reports to it: tensors/tensor.py's empty (created,
with the bytes uploaded) and Tensor.numpy (read_back), objects.GLObject.release (released), and
ops/dispatch.py (dispatch, copy). Off, the cost is one list test per action: callers on hot paths
test `recorders` (the stack itself, innermost last) and call `recorders[-1]` when it is not empty.
"""
from __future__ import annotations

from contextlib import contextmanager

recorders: list = []     # the active recorders, innermost last; only recording() changes it


def active_recorder():
    """The innermost active recorder, or None."""
    return recorders[-1] if recorders else None


@contextmanager
def recording(recorder):
    """Report every GPU action made inside to `recorder` (innermost recorder wins)."""
    recorders.append(recorder)
    try:
        yield recorder
    finally:
        recorders.remove(recorder)
