"""GPU timestamps from GL timer queries (glQueryCounter with GL_TIMESTAMP, core since GL 3.3).

A profiler brackets each dispatch with two queries; the GPU writes each one's timestamp when every
command before it has completed, so the difference is the dispatch's time on the GPU whether the
driver runs it at once (llvmpipe) or later (a real GPU). Results are read only when the profile
asks for them (`resolve`), so that recording never waits for the GPU.

The queries are GL objects like any other: each is registered in runtime/objects.py (kind
"query", 0 bytes) and deleted by `release()` at the end of the profile, so memory() and the
driver's count are back where they were. A driver whose GL_TIMESTAMP counter has 0 bits (allowed
by GL) has no timestamps: `supported()` says so and the profiler records CPU time only.
"""
from __future__ import annotations

import ctypes

from ..runtime import context
from ..runtime.objects import GLObject

GL_TIMESTAMP = 0x8E28
GL_QUERY_COUNTER_BITS = 0x8864
GL_QUERY_RESULT = 0x8866
GROW_BY = 64             # queries made at a time
RESOLVE_AFTER = 4096     # queries waiting for their result before the oldest are read and reused
LABEL = "profiler timer query"


def counter_bits() -> int:
    """Bits of the driver's GL_TIMESTAMP counter (0: no timestamps)."""
    bits = ctypes.c_int(0)
    context.driver().glGetQueryiv(GL_TIMESTAMP, GL_QUERY_COUNTER_BITS, ctypes.byref(bits))
    return bits.value


def supported() -> bool:
    return counter_bits() > 0


def gpu_now_ns() -> int:
    """The GPU's clock now (glGetInteger64v(GL_TIMESTAMP)), to place query results on the CPU's
    timeline."""
    value = ctypes.c_int64(0)
    context.driver().glGetInteger64v(GL_TIMESTAMP, ctypes.byref(value))
    return value.value


class TimerQuery:
    """One query name: what objects.GLObject needs of a handle (`glo`, `release()`)."""
    __slots__ = ("glo",)

    def __init__(self, glo: int):
        self.glo = glo

    def release(self) -> None:
        context.driver().glDeleteQueries(1, ctypes.byref(ctypes.c_uint(self.glo)))


class QueryPool:
    """Timer queries for one profile: `stamp()` writes a timestamp into a fresh query and returns
    its name; `result(name)` reads it (waiting for the GPU) and frees the query for reuse."""

    def __init__(self):
        gl = context.driver()
        self._counter, self._get = gl.glQueryCounter, gl.glGetQueryObjectui64v
        self._objects: list[GLObject] = []
        self._free: list[int] = []
        self._value = ctypes.c_uint64(0)
        self._value_ref = ctypes.byref(self._value)

    @property
    def made(self) -> int:
        return len(self._objects)

    def _grow(self) -> None:
        gl = context.driver()
        names = (ctypes.c_uint * GROW_BY)()
        gl.glGenQueries(GROW_BY, names)
        for glo in names:
            # A generated name becomes a query object at its first use: stamp it once now, so
            # that it exists when the registry labels it.
            self._counter(glo, GL_TIMESTAMP)
            self._objects.append(GLObject("query", TimerQuery(glo), 0, LABEL))
            self._free.append(glo)

    def stamp(self) -> int:
        if not self._free:
            self._grow()
        glo = self._free.pop()
        self._counter(glo, GL_TIMESTAMP)
        return glo

    def result(self, glo: int) -> int:
        """The timestamp (ns, GPU clock) query `glo` holds; the query is free again after."""
        self._get(glo, GL_QUERY_RESULT, self._value_ref)
        self._free.append(glo)
        return self._value.value

    def release(self) -> None:
        for obj in reversed(self._objects):
            obj.release(report=False)        # not a tensor: no plan recorder's business
        self._objects.clear()
        self._free.clear()


__all__ = ["GL_TIMESTAMP", "QueryPool", "RESOLVE_AFTER", "TimerQuery", "counter_bits",
           "gpu_now_ns", "supported"]
