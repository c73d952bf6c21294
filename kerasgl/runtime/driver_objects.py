"""GL objects as the driver sees them, to check kerasgl's own registry (objects.py) against.

The driver has no "list every object" call, so we ask it about each name: glIsBuffer, glIsTexture
and glIsProgram over every name up to the highest kerasgl has been given (plus a margin, to catch
objects made behind kerasgl's back), and read sizes with glGetNamedBufferParameteriv and
glGetTextureLevelParameteriv. Names are small integers handed out from 1 upwards (Mesa reuses
freed ones), so the probe is short.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import context, objects

KINDS = ("buffer", "texture", "program")
# The profiler's timer queries (kerasgl/profiler/) live only inside a `with kg.profile()` block:
# probed like the rest, and in counts() only while the driver holds some.
PROBED_KINDS = KINDS + ("query",)
PROBE_MARGIN = 64
_BYTES_PER_TEXEL = {0x822E: 4, 0x8235: 4, 0x8236: 4, 0x8814: 16, 0x8D70: 16, 0x8058: 4, 0x881A: 8,
                    0x822D: 2, 0x8230: 8, 0x8229: 1}   # R32F R32I R32UI RGBA32F RGBA32UI RGBA8 ...


@dataclass(frozen=True)
class DriverObjects:
    """Live GL names by kind, and their sizes in bytes, as reported by the driver."""
    names: dict = field(default_factory=dict)    # kind -> sorted list of GL names
    bytes: dict = field(default_factory=dict)    # kind -> total bytes (programs: 0, unknown)

    def count(self, kind: str) -> int:
        return len(self.names.get(kind, ()))

    def counts(self) -> dict:
        found = {kind: self.count(kind) for kind in KINDS}
        if self.count("query"):
            found["query"] = self.count("query")
        return found


def _texture_bytes(gl, glo: int) -> int:
    width, height, internal_format, data_store = gl.texture_extent(glo)
    if data_store:
        return 0              # a view of a buffer (buffer_views.py): its bytes are the buffer's
    return width * height * _BYTES_PER_TEXEL.get(internal_format, 4)


def probe_limit(kind: str) -> int:
    return objects.highest_name_seen(kind) + PROBE_MARGIN


def is_live(kind: str, glo: int) -> bool:
    """Whether the driver still knows GL name `glo` as an object of this kind."""
    gl = context.driver()
    return bool(_probes(gl)[kind](glo))


def _probes(gl) -> dict:
    return {"buffer": gl.glIsBuffer, "texture": gl.glIsTexture, "program": gl.glIsProgram,
            "query": gl.glIsQuery}


def driver_objects() -> DriverObjects:
    """Ask the driver which buffers, textures, programs and queries exist in kerasgl's context."""
    gl = context.driver()
    probes = _probes(gl)
    names, sizes = {}, {}
    for kind in PROBED_KINDS:
        live = [glo for glo in range(1, probe_limit(kind) + 1) if probes[kind](glo)]
        names[kind] = live
        if kind == "buffer":
            sizes[kind] = sum(gl.buffer_size(glo) for glo in live)
        elif kind == "texture":
            sizes[kind] = sum(_texture_bytes(gl, glo) for glo in live)
        else:
            sizes[kind] = 0
    return DriverObjects(names=names, bytes=sizes)


def registry_names() -> dict:
    """kind -> sorted GL names of the objects kerasgl's registry holds alive."""
    names = {kind: [] for kind in PROBED_KINDS}
    for obj in objects.live_gl_objects():
        names.setdefault(obj.kind, []).append(obj.glo)
    return {kind: sorted(v) for kind, v in names.items()}


def mismatches() -> list[str]:
    """Differences between kerasgl's registry and the driver (empty when they agree)."""
    found, ours = driver_objects(), registry_names()
    problems = []
    for kind in PROBED_KINDS:
        extra = sorted(set(found.names.get(kind, ())) - set(ours.get(kind, ())))
        missing = sorted(set(ours.get(kind, ())) - set(found.names.get(kind, ())))
        if extra:
            problems.append(f"the driver has {kind}s kerasgl does not know of: {extra}")
        if missing:
            problems.append(f"kerasgl's registry lists {kind}s the driver does not have: {missing}")
    return problems


# kg.shutdown() reports what the driver still counts just before the context goes (all zero when
# every owner released its objects).
context.set_shutdown_census(lambda: driver_objects().counts())
