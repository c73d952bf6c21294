"""The registry of GL objects: every buffer, texture and program kerasgl creates, with one owner.

Every GL object kerasgl makes is wrapped in a GLObject here with its kind, size, GL name and a
label saying what it is for ("tensor", "conv2d_3/weight0", "plan ...", "matmul.comp"), and deleted
by `release()` at once when its owner lets go: a tensor's storage (kerasgl/tensors/ownership.py),
the program cache (shaders.py), an execution plan. Python's garbage collector plays no part (the
context runs with moderngl's automatic collection off). `memory()` and the driver cross-check
(driver_objects.py) read the registry.

The label is also given to the driver (glObjectLabel, once, at creation), so that a GL debugger or
an apitrace dump names each object as kerasgl does.
"""
from __future__ import annotations

from collections import Counter

from . import context, recording

PLAN_LABEL = "plan"                 # labels of GL objects an execution plan owns start with this


class GLObject:
    """One GL object (buffer, texture or program) with exactly one owner."""
    __slots__ = ("kind", "handle", "glo", "nbytes", "label", "views", "__weakref__")

    def __init__(self, kind: str, handle, nbytes: int, label: str = ""):
        self.kind, self.handle, self.glo = kind, handle, int(handle.glo)
        self.nbytes, self.label = int(nbytes), label
        self.views: list | None = None   # a buffer's texture views (buffer_views.py), GLObjects
        _registry[id(self)] = self
        _names_seen[kind] = max(_names_seen[kind], self.glo)
        totals.made += self.nbytes
        if label:
            context.driver().set_label(kind, self.glo, label)

    @property
    def alive(self) -> bool:
        return self.handle is not None

    def release(self, report: bool = True) -> None:
        """Delete the GL object now. Releasing twice is harmless. `report`: tell an active plan
        recorder (not for a buffer's view, which goes with its buffer and is not the recorder's)."""
        if self.handle is None:
            return
        context.get_context()  # the GL call must come from the context's thread
        if self.views:
            # First: GL would keep the buffer's memory alive while a texture refers to it.
            for view in self.views:
                view.release(report=False)
        self.views = None
        if self.kind == "program":
            # GL only flags the program in use for deletion; unbinding it makes the delete real.
            context.driver().glUseProgram(0)
        self.handle.release()
        self.handle = None
        _registry.pop(id(self), None)
        totals.released += self.nbytes
        if recording.recorders and report:
            recording.recorders[-1].released(self)


class _Totals:
    """Bytes of GL objects made and released so far: the profiler (kerasgl/profiler/) reads them
    around each dispatch for the bytes allocated, freed and live. One addition per object."""
    __slots__ = ("made", "released")

    def __init__(self):
        self.made = self.released = 0


totals = _Totals()
_registry: dict[int, GLObject] = {}
_names_seen: Counter = Counter()   # highest GL name seen per kind, bounds the driver probe


def live_gl_objects() -> list[GLObject]:
    return list(_registry.values())


def gl_object_of(handle) -> GLObject | None:
    """The registered GLObject wrapping a moderngl handle (a linear search: for rare callers,
    such as a recorder meeting a raw buffer)."""
    for obj in _registry.values():
        if obj.handle is handle:
            return obj
    return None


def highest_name_seen(kind: str) -> int:
    return _names_seen[kind]


def release_all() -> None:
    """Release every registered GL object: what kg.shutdown() finds left once every owner (models,
    tensors, the program cache) has let go of its own."""
    for obj in list(_registry.values()):
        obj.release(report=False)


context.on_shutdown(release_all)
