"""Finds the GLSL files in `shaders/`, resolves `#include`, injects `#define`s, compiles, caches;
and remembers the value each cached program's uniforms hold (set_uniforms).

A program is keyed by (file, defines): each distinct key compiles once per context and lives as
long as the context (or until `clear_program_cache()`); `memory()` counts programs as GL objects.
"""
from __future__ import annotations

import os
import re

from . import context
from ..errors import KerasGLError
from .objects import GLObject

_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"\s*$', re.MULTILINE)
_cache: dict[tuple, GLObject] = {}
_sources: dict[str, str] = {}


class ShaderError(KerasGLError):
    """A shader failed to compile or link (a bug in kerasgl, or a driver that rejects valid GLSL)."""


def shader_dir() -> str:
    """`shaders/` as installed inside the package (kerasgl/_shaders, see setup.cfg), else the
    repository's (a source checkout or an editable install). A plain directory, not
    importlib.resources: kerasgl._shaders has no __init__.py, and a namespace package's
    resources object does not name a real path."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # kerasgl/
    installed = os.path.join(package, "_shaders")
    if os.path.isfile(os.path.join(installed, "common.glsl")):
        return installed
    return os.path.join(os.path.dirname(package), "shaders")


def _read(name: str, seen: tuple = ()) -> str:
    if name in seen:
        raise ShaderError(f"#include cycle in shaders: {' -> '.join(seen + (name,))}")
    if name not in _sources:
        path = os.path.join(shader_dir(), name)
        try:
            with open(path, encoding="utf-8") as handle:
                _sources[name] = handle.read()
        except OSError as exc:
            raise ShaderError(f"Shader file {path} cannot be read: {exc}") from exc
    return _INCLUDE.sub(lambda m: _read(m.group(1), seen + (name,)), _sources[name])


def source(name: str, defines: dict | None = None) -> str:
    """Full GLSL text of shaders/<name>: includes resolved, defines after the #version line."""
    text = _read(name)
    lines = text.split("\n", 1)
    if not lines[0].startswith("#version"):
        raise ShaderError(f"shaders/{name} must start with a #version line")
    define_lines = "".join(f"#define {key} {_glsl(value)}\n" for key, value in (defines or {}).items())
    return f"{lines[0]}\n{define_lines}#line 2\n{lines[1] if len(lines) > 1 else ''}"


def _glsl(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value) if ("e" in repr(value) or "." in repr(value)) else f"{value}.0"
    return str(value)


def program(name: str, defines: dict | None = None):
    """The compiled compute program for shaders/<name> with these defines (cached)."""
    key = (name, tuple(sorted((defines or {}).items())))
    cached = _cache.get(key)
    if cached is not None and cached.alive:
        return cached.handle
    ctx = context.get_context()
    text = source(name, defines)
    try:
        compiled = ctx.compute_shader(text)
    except Exception as exc:
        raise ShaderError(f"shaders/{name} with defines {dict(defines or {})} failed to compile: {exc}") from exc
    _cache[key] = GLObject("program", compiled, 0, label=name)
    return compiled


def program_key(name: str, defines: dict | None = None) -> tuple:
    """The program cache's key for shaders/<name> with these defines."""
    return (name, tuple(sorted((defines or {}).items())))


def cached_program_object(key: tuple) -> GLObject | None:
    """The GLObject of the program cached under `key` (program_key), None if none was compiled:
    execution plans keep it to know whether their programs are still alive."""
    return _cache.get(key)


def clear_program_cache() -> None:
    """Delete every cached program (they are compiled again on next use)."""
    for obj in _cache.values():
        obj.release()
    _cache.clear()
    _sources.clear()
    _uniform_values.clear()


def cached_program_count() -> int:
    return sum(1 for obj in _cache.values() if obj.alive)


# The value each uniform of a cached program holds (GL keeps uniforms in the program object), so
# that a write of the same value is skipped: on llvmpipe any uniform write made the next dispatch
# ~30 us slower (a 1-group matmul 31 -> 64 us), and a replayed plan or a repeated eager op mostly
# writes what is already there. Every uniform write goes through set_uniforms (ops/dispatch.py,
# plans); the table is keyed by moderngl's uniform objects (kept alive here, so never confused
# with a later program's) and emptied with the program cache (clear_program_cache).
_uniform_values: dict = {}
_UNSET = object()


def set_uniforms(settings) -> None:
    """Write (moderngl uniform member, value) pairs, skipping those already holding the value."""
    held = _uniform_values
    for member, value in settings:
        if held.get(member, _UNSET) != value:
            member.value = value
            held[member] = value


def forget_uniform_values() -> None:
    """Forget what every uniform holds (the next set_uniforms writes each value again)."""
    _uniform_values.clear()


context.on_shutdown(clear_program_cache)      # kg.shutdown(): the programs go with the context
