"""Recording one eager predict call: what the GPU did, as an execution plan needs to know it.

A Recorder is handed to runtime/recording.py's recording() around graph.execute and receives
every GPU action: each dispatch with its program, the GL object bound at each binding and the
uniform values (as ops/dispatch.resolve_uniforms sets them), buffer copies, uploads made during
the call and read-backs, and when each GL object is made and freed. It notes what no plan could
replay (`hard`: a read-back, a tensor from before the call freed or written; `soft`: state kept
after the call) and its `signature()` says whether two calls did the same thing.

The layer whose call is running is what the graph executor says it is (`current_layer`, set by
compiler/graph.py around each layer's call): messages name it.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from ..runtime import objects, shaders
from ..tensors.tensor import Tensor


class _CurrentLayer:
    """The name of the layer whose call the graph executor is running (None outside any), set
    and put back by compiler/graph.py around each call (a nested model's layers inside its own)."""
    __slots__ = ("name",)

    def __init__(self):
        self.name: str | None = None


current_layer = _CurrentLayer()


# -------------------------------------------------------------------------------------------------
# Which bindings a shader writes (from its storage block qualifiers)
# -------------------------------------------------------------------------------------------------
_BLOCK = re.compile(r"layout\s*\(([^)]*)\)\s*((?:\w+\s+)*)buffer\b")
_BINDING = re.compile(r"binding\s*=\s*(\d+)")
_written_cache: dict = {}


def written_bindings(name: str, defines: dict | None) -> frozenset:
    """SSBO bindings the shader may write: every storage block not declared readonly (every
    declaration of a binding counts, whichever #if branch it is in: conservative)."""
    key = (name, tuple(sorted((defines or {}).items())))
    found = _written_cache.get(key)
    if found is None:
        written = set()
        for layout, qualifiers in _BLOCK.findall(shaders.source(name, defines)):
            binding = _BINDING.search(layout)
            if binding and "readonly" not in qualifiers.split():
                written.add(int(binding.group(1)))
        found = _written_cache[key] = frozenset(written)
    return found


# -------------------------------------------------------------------------------------------------
# What was recorded: GL objects by token, and the actions in order
# -------------------------------------------------------------------------------------------------
class DispatchRecord(NamedTuple):
    """A dispatch: tokens stand for the GL objects bound (see _Seen.token)."""
    key: tuple                 # (shader file, sorted defines): the program cache's key
    program_object: object     # the program's GLObject in the cache (None if not cached)
    program: object            # the moderngl program
    tokens: tuple              # the token bound at SSBO binding 0, 1, ...
    images: tuple              # (unit, token, read, write, format)
    settings: tuple            # (moderngl uniform member, value)
    groups: tuple
    views: tuple               # (unit, token, format): read-only texture views of buffers
    kind = "dispatch"


class CopyRecord(NamedTuple):
    dst: tuple
    src: tuple
    size: int
    read_offset: int
    write_offset: int
    kind = "copy"


class UploadRecord(NamedTuple):
    token: tuple
    data: bytes
    kind = "upload"


class _Seen:
    """A GL object the recorded call touched or made. Its token: ("in", i) for input i, ("t", n)
    for the n-th object made during the call, ("w", id) for one made before it (a weight)."""
    __slots__ = ("gl", "token", "made", "released", "written", "data", "first", "last", "kind",
                 "nbytes", "extent", "texture_dtype", "layer")

    def __init__(self, gl, token, made, layer=None):
        self.gl, self.token, self.made, self.layer = gl, token, made, layer
        self.released = self.written = False
        self.data = None
        self.first = self.last = None
        self.kind, self.nbytes = gl.kind, gl.nbytes
        self.extent = tuple(gl.handle.size) if gl.kind == "texture" else None
        self.texture_dtype = gl.handle.dtype if gl.kind == "texture" else None


class Recorder:
    """Receives the GPU-action reports of one graph.execute call (runtime/recording.py)."""

    def __init__(self, inputs: list[Tensor]):
        self.seen: dict[int, _Seen] = {}
        self.steps: list[tuple] = []     # DispatchRecord, CopyRecord, UploadRecord in order
        # Per step: (the layer running, the shapes of the tensors bound), for profiles of replays.
        self.step_facts: list[tuple] = []
        self.hard: list[str] = []        # problems no later call can fix
        self.soft: list[str] = []        # problems a later call may not have (lazy caches)
        self.paused = False
        self._made = 0
        self.input_tokens = []
        for i, t in enumerate(inputs):
            gl = t.gl_object
            if id(gl) in self.seen:
                self.hard.append("two inputs share one GPU buffer")
                continue
            self.seen[id(gl)] = _Seen(gl, ("in", i), made=False)
            self.input_tokens.append(("in", i))
        self.outputs: list[tuple] = []   # (token, shape, dtype)
        self.checks: list[tuple] = []    # (token, facts): flag buffers read with the outputs

    # -- reports from tensors / objects / dispatch -----------------------------------------------
    def created(self, gl, data) -> None:
        if self.paused:
            return
        seen = _Seen(gl, ("t", self._made), made=True, layer=current_layer.name)
        self._made += 1
        self.seen[id(gl)] = seen
        if data is not None:
            seen.data = bytes(data)
            self._use_many(UploadRecord(seen.token, seen.data), [seen])

    def released(self, gl) -> None:
        seen = self.seen.get(id(gl))
        if seen is not None:
            seen.released = True
        if gl.kind != "program" and not self.paused and (seen is None or not seen.made):
            self.hard.append(f"a tensor made before the call was freed during it (layer "
                             f"'{current_layer.name}' replaces its state)")

    def read_back(self, gl) -> None:
        if not self.paused:
            self.hard.append(f"layer '{current_layer.name}' reads data back to the CPU during "
                             "the call")

    def dispatch(self, name, defines, program, buffers, handles, images, settings, groups,
                 views=(), work=None) -> None:
        if self.paused:
            return
        written = written_bindings(name, defines)
        tokens, used = [], []
        for binding, (buf, handle) in enumerate(zip(buffers, handles)):
            seen = self._lookup(buf.gl_object if isinstance(buf, Tensor) else None, handle)
            if seen is None:
                return
            if binding in written:
                self._mark_written(seen)
            tokens.append(seen.token)
            used.append(seen)
        image_steps = []
        for unit, texture, read, write, fmt in images:
            seen = self._lookup(None, texture)
            if seen is None:
                return
            if write:
                self._mark_written(seen)
            image_steps.append((unit, seen.token, bool(read), bool(write), fmt))
            used.append(seen)
        view_steps = []
        for unit, tensor, fmt in views:        # read-only views of buffers (buffer_views.py)
            seen = self._lookup(tensor.gl_object, None)
            if seen is None:
                return
            view_steps.append((unit, seen.token, fmt))
            used.append(seen)
        key = shaders.program_key(name, defines)
        shapes = tuple(tuple(b.shape) for b in buffers if isinstance(b, Tensor))
        self._use_many(DispatchRecord(key, shaders.cached_program_object(key), program,
                                      tuple(tokens), tuple(image_steps), tuple(settings),
                                      tuple(groups), tuple(view_steps)), used, shapes, work)

    def copy(self, dst, src, size, read_offset, write_offset) -> None:
        if self.paused:
            return
        d = self._lookup(dst.gl_object, None)
        s = self._lookup(src.gl_object, None)
        if d is None or s is None:
            return
        self._mark_written(d)
        self._use_many(CopyRecord(d.token, s.token, size, read_offset, write_offset), [d, s],
                       (tuple(dst.shape), tuple(src.shape)))

    # -- bookkeeping ---------------------------------------------------------------------------------
    def _lookup(self, gl, handle):
        if gl is None:
            gl = objects.gl_object_of(handle)
            if gl is None:
                self.hard.append("an op binds a GL object kerasgl does not own")
                return None
        seen = self.seen.get(id(gl))
        if seen is None:
            seen = self.seen[id(gl)] = _Seen(gl, ("w", id(gl)), made=False)
        return seen

    def _mark_written(self, seen) -> None:
        seen.written = True
        if not seen.made and seen.token[0] == "w":
            self.hard.append(f"layer '{current_layer.name}' writes into a tensor made before the "
                             "call (state kept on the GPU)")

    def _use_many(self, step, seens, shapes=(), work=None) -> None:
        index = len(self.steps) + 1          # step 0: the inputs are written
        self.steps.append(step)
        # (layer, shapes bound, the op's declared (flops, bytes)): for profiles of the replays
        self.step_facts.append((current_layer.name, shapes, work))
        for seen in seens:
            if seen.first is None:
                seen.first = index
            seen.last = index

    def by_token(self) -> dict:
        """Every GL object seen, by token."""
        return {s.token: s for s in self.seen.values()}

    # -- the end of the call --------------------------------------------------------------------------
    def set_outputs(self, outputs: list[Tensor], checks=()) -> None:
        """The call's outputs, and the flag buffers of the GPU's checks (ops/gpu_checks.py:
        (tensor, facts) pairs), which a plan reads after its steps as it reads the outputs."""
        for t in outputs:
            if t.storage != "buffer":
                self.hard.append("an output is stored in a texture")
            seen = self._lookup(t.gl_object, None)
            if seen is not None:
                self.outputs.append((seen.token, tuple(t.shape), t.dtype))
        for flags, facts in checks:
            seen = self._lookup(flags.gl_object, None)
            if seen is not None:
                self.checks.append((seen.token, facts))

    def finish(self) -> None:
        """After the call's temporaries are gone: anything made during the call and still alive,
        other than an output, is state the next call would depend on."""
        output_tokens = {token for token, _, _ in self.outputs}
        for seen in self.seen.values():
            if seen.made and not seen.released and seen.token not in output_tokens:
                self.soft.append(f"layer '{seen.layer}' keeps a tensor made during the call "
                                 "(state carried between calls)")
                break

    def signature(self) -> tuple:
        """What must be identical between two calls for one plan to serve both."""
        steps = []
        for step in self.steps:
            if step.kind == "dispatch":
                steps.append((step.kind, step.key, step.tokens, step.images,
                              tuple((id(m), _comparable(v)) for m, v in step.settings),
                              step.groups, step.views))
            else:
                steps.append((step.kind, *step))
        return (tuple(steps), tuple(self.outputs), tuple(self.checks))


def _comparable(value):
    return tuple(value) if isinstance(value, (list, tuple)) else value


def program_name(key: tuple) -> str:
    """A program as profiles name it, from its cache key (shader file, sorted defines): the file
    and the defines that are set, a flag by its name alone (`conv2d.comp ACT=act_relu X_VIEW`)."""
    name, defines = key
    return name + "".join(f" {k}" if v is True else f" {k}={v}"
                          for k, v in defines if v is not False and v is not None)


def step_name(step) -> str:
    """A recorded step as profiles name it: its program (program_name), or the kind."""
    return program_name(step.key) if step.kind == "dispatch" else step.kind


__all__ = ["CopyRecord", "DispatchRecord", "Recorder", "UploadRecord", "current_layer",
           "program_name", "step_name", "written_bindings"]
