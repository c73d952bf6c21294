"""What the driver says about a compiled compute program that moderngl does not expose: its work
group size (glGetProgramiv with GL_COMPUTE_WORK_GROUP_SIZE), for profiles (kerasgl/profiler/:
an event's local_size and invocations). Asked of the driver rather than read from the defines:
every shader spells its layout with its own defines (LOCAL_SIZE, LX / LY, ...), and the program
the driver linked is the one that runs.

glGetProgramiv is looked up as context.py's raw entry points are (eglGetProcAddress), on first
use only: nothing here runs outside a profile.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import weakref

from ..errors import GLContextError
from . import context

GL_COMPUTE_WORK_GROUP_SIZE = 0x8267
_get_program_iv = None
# program (moderngl ComputeShader) -> (x, y, z); a program's layout never changes, and the entry
# goes with the program.
_sizes: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _getter():
    global _get_program_iv
    if _get_program_iv is None:
        context.get_context()
        egl = ctypes.CDLL(ctypes.util.find_library("EGL") or "libEGL.so.1")
        egl.eglGetProcAddress.restype = ctypes.c_void_p
        egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]
        address = egl.eglGetProcAddress(b"glGetProgramiv")
        if not address:
            raise GLContextError("The GL driver does not provide glGetProgramiv.")
        _get_program_iv = ctypes.CFUNCTYPE(None, ctypes.c_uint, ctypes.c_uint,
                                           ctypes.POINTER(ctypes.c_int))(address)
    return _get_program_iv


def local_size(program) -> tuple[int, int, int]:
    """The work group size (x, y, z) a compute program was linked with."""
    size = _sizes.get(program)
    if size is None:
        values = (ctypes.c_int * 3)()
        _getter()(program.glo, GL_COMPUTE_WORK_GROUP_SIZE, values)
        size = _sizes[program] = tuple(int(v) for v in values)
    return size


def _forget() -> None:
    """A new context has new entry points (kg.shutdown, then any call)."""
    global _get_program_iv
    _get_program_iv = None
    _sizes.clear()


context.on_shutdown(_forget)

__all__ = ["local_size"]
