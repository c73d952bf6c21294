"""What the driver says about a compiled compute program that moderngl does not expose: its work
group size (glGetProgramiv with GL_COMPUTE_WORK_GROUP_SIZE), for profiles (kerasgl/profiler/:
an event's local_size and invocations). Asked of the driver rather than read from the defines:
every shader spells its layout with its own defines (LOCAL_SIZE, LX / LY, ...), and the program
the driver linked is the one that runs.

glGetProgramiv is one of context.py's raw entry points (context.driver()).
"""
from __future__ import annotations

import ctypes
import weakref

from . import context

GL_COMPUTE_WORK_GROUP_SIZE = 0x8267
# program (moderngl ComputeShader) -> (x, y, z); a program's layout never changes, and the entry
# goes with the program.
_sizes: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def local_size(program) -> tuple[int, int, int]:
    """The work group size (x, y, z) a compute program was linked with."""
    size = _sizes.get(program)
    if size is None:
        values = (ctypes.c_int * 3)()
        context.driver().glGetProgramiv(program.glo, GL_COMPUTE_WORK_GROUP_SIZE, values)
        size = _sizes[program] = tuple(int(v) for v in values)
    return size


def _forget() -> None:
    """A new context has new programs (kg.shutdown, then any call)."""
    _sizes.clear()


context.on_shutdown(_forget)

__all__ = ["local_size"]
