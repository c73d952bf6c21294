"""Execution plans: a model's predict for one input shape, recorded once and replayed.

The first predict calls at a new input shape run eagerly (graph.execute: every op allocates its
output, every intermediate is freed after its last use) under a recorder that sees every GPU
action: each dispatch with its program, the GL object bound at each binding and the uniform values
(as dispatch.resolve_uniforms sets them), buffer copies, uploads made during the call and
read-backs, and when each GL object is made and freed. When two consecutive recordings agree
(same programs, uniforms, groups and constant data: nothing about the call depends on the call),
the recording is compiled into a plan:

- every intermediate gets a place in a shared GL buffer; tensors whose lifetimes do not overlap
  share one (memory_plan.assign, TFLite's greedy-by-size);
- the dispatch list is kept with its programs, bindings and uniform members resolved ahead.

A steady-state predict then writes the input arrays into the input slots, binds and dispatches,
and reads the outputs: it creates no GL object at all, and gives bit-identical results (the same
programs run with the same uniforms on the same data; only the buffers' names differ).

A call that cannot be replayed falls back to eager execution, never to a wrong answer; why is in
`Model.plan_info()` and the summary. Not plannable: a read-back to the CPU during the call (an op
that checks data on the CPU), a tensor made during the call that outlives it without being an
output (layer state: stateful RNNs), a tensor made before the call and freed or written during it,
a layer declaring `plannable = False`, or recordings that differ from call to call (random numbers
without a seed). Inputs that are Tensors stored in textures run eagerly too.

Given Tensors, a planned predict copies the inputs into the plan's input slots and returns fresh
Tensors copied out of the plan (owned by the caller's current tidy scope).

The plans' GL objects belong to the model (registered in ownership.py with labels starting
"plan"; memory().planned_bytes counts them) and are freed with it, or when a plan leaves the
model's small cache of recent input shapes.
"""
from __future__ import annotations

import os
import re
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..runtime import buffer_views, context, shaders
from . import memory_plan
from ..tensors import ownership
from ..devices.llvmpipe import placement as worker_placement
from ..ops import dispatch
from ..tensors.tensor import DTYPES, Tensor, empty

PLANS_ENV = "KERASGL_PLANS"          # "0" turns plans off for the process (eager predict always)
CACHE_SIZE = 3                       # plans kept per model (input shapes x requested outputs)
MAX_RECORDINGS = 4                   # eager recorded calls per shape before giving up on a plan
_GL_NEAREST = 0x2600


def plans_enabled_by_default() -> bool:
    return os.environ.get(PLANS_ENV, "1") not in ("0", "false", "False", "no")


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
# Recording one eager call
# -------------------------------------------------------------------------------------------------
class _Seen:
    """A GL object the recorded call touched or made."""
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


def _layer_in_stack() -> str | None:
    """The name of the innermost layer whose code is running (for messages)."""
    from ..layers.base import Layer
    frame = sys._getframe(2)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Layer):
            return candidate.name
        frame = frame.f_back
    return None


class Recorder:
    """Receives ownership.py's GPU-action reports during one graph.execute call."""

    def __init__(self, inputs: list[Tensor]):
        self.seen: dict[int, _Seen] = {}
        self.steps: list[tuple] = []
        self.hard: list[str] = []        # problems no later call can fix
        self.soft: list[str] = []        # problems a later call may not have (lazy caches)
        self.paused = False
        self._made = 0
        self.input_tokens = []
        for i, t in enumerate(inputs):
            gl = t._storage.gl
            if id(gl) in self.seen:
                self.hard.append("two inputs share one GPU buffer")
                continue
            self.seen[id(gl)] = _Seen(gl, ("in", i), made=False)
            self.input_tokens.append(("in", i))
        self.outputs: list[tuple] = []   # (token, shape, dtype)

    # -- reports from ownership / tensor / dispatch ----------------------------------------------
    def created(self, gl, data) -> None:
        if self.paused:
            return
        seen = _Seen(gl, ("t", self._made), made=True, layer=_layer_in_stack())
        self._made += 1
        self.seen[id(gl)] = seen
        if data is not None:
            seen.data = bytes(data)
            self._use_many(("upload", seen.token, seen.data), [seen])

    def released(self, gl) -> None:
        seen = self.seen.get(id(gl))
        if seen is not None:
            seen.released = True
        if gl.kind != "program" and not self.paused and (seen is None or not seen.made):
            self.hard.append(f"a tensor made before the call was freed during it (layer "
                             f"'{_layer_in_stack()}' replaces its state)")

    def read_back(self, gl) -> None:
        if not self.paused:
            self.hard.append(f"layer '{_layer_in_stack()}' reads data back to the CPU during the call")

    def dispatch(self, name, defines, program, buffers, handles, images, settings, groups,
                 views=()) -> None:
        if self.paused:
            return
        written = written_bindings(name, defines)
        tokens, used = [], []
        for binding, (buf, handle) in enumerate(zip(buffers, handles)):
            seen = self._lookup(buf._storage.gl if isinstance(buf, Tensor) else None, handle)
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
            seen = self._lookup(tensor._storage.gl, None)
            if seen is None:
                return
            view_steps.append((unit, seen.token, fmt))
            used.append(seen)
        key = (name, tuple(sorted((defines or {}).items())))
        program_object = shaders._cache.get(key)
        step = ("dispatch", key, program_object, program, tuple(tokens), tuple(image_steps),
                tuple(settings), tuple(groups), tuple(view_steps))
        self._use_many(step, used)

    def copy(self, dst, src, size, read_offset, write_offset) -> None:
        if self.paused:
            return
        d = self._lookup(dst._storage.gl, None)
        s = self._lookup(src._storage.gl, None)
        if d is None or s is None:
            return
        self._mark_written(d)
        self._use_many(("copy", d.token, s.token, size, read_offset, write_offset), [d, s])

    # -- bookkeeping ---------------------------------------------------------------------------------
    def _lookup(self, gl, handle):
        if gl is None:
            gl = ownership.gl_object_of(handle)
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
            self.hard.append(f"layer '{_layer_in_stack()}' writes into a tensor made before the "
                             "call (state kept on the GPU)")

    def _use_many(self, step, seens) -> None:
        index = len(self.steps) + 1          # step 0: the inputs are written
        self.steps.append(step)
        for seen in seens:
            if seen.first is None:
                seen.first = index
            seen.last = index

    @property
    def _by_token(self):
        return {s.token: s for s in self.seen.values()}

    # -- the end of the call --------------------------------------------------------------------------
    def set_outputs(self, outputs: list[Tensor]) -> None:
        for t in outputs:
            if t.storage != "buffer":
                self.hard.append("an output is stored in a texture")
            seen = self._lookup(t._storage.gl, None)
            if seen is not None:
                self.outputs.append((seen.token, tuple(t.shape), t.dtype))

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
            if step[0] == "dispatch":
                _, key, _, _, tokens, images, settings, groups, views = step
                steps.append((key, tokens, images,
                              tuple((id(m), _comparable(v)) for m, v in settings), groups, views))
            else:
                steps.append(step)
        return (tuple(steps), tuple(self.outputs))


def _comparable(value):
    return tuple(value) if isinstance(value, (list, tuple)) else value


# -------------------------------------------------------------------------------------------------
# The compiled plan
# -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlanInfo:
    """What a model knows about predict at one input shape."""
    input_shapes: tuple
    status: str                # "planned", "recording" (eager until two calls agree) or "eager"
    reason: str = ""           # why eager
    dispatches: int = 0
    planned_bytes: int = 0     # GL memory the plan holds for intermediates, inputs and outputs
    peak_live_bytes: int = 0   # the most bytes alive at once (no assignment can do better)
    naive_bytes: int = 0       # every intermediate in a buffer of its own (eager's total)
    shared_buffers: int = 0
    # llvmpipe: where the driver's workers wait during the steps (worker_placement.py): "trying
    # ..." during the first replays, then what was kept; "" elsewhere.
    placement: str = ""

    def __str__(self) -> str:
        shapes = ", ".join(str(list(s)) for s in self.input_shapes)
        if self.status != "planned":
            return f"input {shapes}: {self.status}{': ' + self.reason if self.reason else ''}"
        ratio = self.planned_bytes / self.naive_bytes if self.naive_bytes else 0.0
        return (f"input {shapes}: planned, {self.dispatches} dispatches, {self.shared_buffers} "
                f"shared buffers of {_mb(self.planned_bytes)} (peak live {_mb(self.peak_live_bytes)}"
                f"; naive sum {_mb(self.naive_bytes)}, {ratio:.1%})"
                + (f"; llvmpipe workers: {self.placement}" if self.placement else ""))


def _mb(n: int) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


class Plan:
    """GL objects and a step list replaying one recorded call."""

    def __init__(self, recording: Recorder, label: str):
        self.label = label
        self._objects: list[ownership.GLObject] = []
        self._views: dict = {}               # (id(shared buffer), format) -> its texture view
        try:
            self._build(recording)
        except BaseException:
            self.release()
            raise

    def _build(self, rec: Recorder) -> None:
        ctx = context.get_context()
        by_token = rec._by_token
        outputs = {token for token, _, _ in rec.outputs}
        end = len(rec.steps) + 1
        handles: dict = {}
        self.persistent: list[ownership.GLObject] = []
        usages, textures, constants = [], [], []
        for token, seen in by_token.items():
            if token[0] == "w":
                handles[token] = seen.gl.handle
                self.persistent.append(seen.gl)
                continue
            if token[0] == "in":
                first, last = 0, max(seen.last or 0, end if token in outputs else 0)
            else:
                if seen.first is None and token not in outputs:
                    continue                       # made and never used: needs no place
                first = seen.first if seen.first is not None else end
                last = end if token in outputs else seen.last
            if seen.kind == "texture":
                textures.append(seen)
            elif seen.data is not None and not seen.written and token not in outputs:
                constants.append(seen)             # uploaded once, read only: plan-owned
            else:
                usages.append(memory_plan.Usage(token, max(4, seen.nbytes), first, last))
        self.naive_bytes = sum(u.size for u in usages) + sum(s.nbytes for s in textures)
        self.peak_live_bytes = memory_plan.peak_live_bytes(usages) + sum(s.nbytes for s in textures)
        assignment = memory_plan.assign(usages)
        shared = [self._buffer(ctx, size) for size in assignment.sizes]
        for token, index in assignment.buffer_of.items():
            handles[token] = shared[index]
        for seen in textures:
            texture = ctx.texture(seen.extent, 1, dtype=seen.texture_dtype)
            texture.filter = (_GL_NEAREST, _GL_NEAREST)
            self._own("texture", texture, seen.nbytes)
            handles[seen.token] = texture
        for seen in constants:
            handles[seen.token] = self._buffer(ctx, len(seen.data), seen.data)
        self.shared_buffers = len(shared)
        self.planned_bytes = sum(obj.nbytes for obj in self._objects)
        constant_tokens = {seen.token for seen in constants}

        steps, programs, dispatches = [], {}, 0
        self.step_names: list[str] = []            # shader and defines per step, for profiling
        for step in rec.steps:
            self.step_names.append(_step_name(step))
            if step[0] == "dispatch":
                _, key, program_object, program, tokens, images, settings, groups, views = step
                if program_object is not None:
                    programs[id(program_object)] = program_object
                binds = tuple((b, handles[t]) for b, t in enumerate(tokens))
                image_binds = tuple((unit, handles[t], r, w, fmt) for unit, t, r, w, fmt in images)
                view_binds = tuple((unit, self._view(t, fmt, handles[t], by_token))
                                   for unit, t, fmt in views)
                steps.append((0, program.run, binds, image_binds, view_binds, settings, groups))
                dispatches += 1
            elif step[0] == "copy":
                _, dst, src, size, read_offset, write_offset = step
                steps.append((1, handles[dst], handles[src], size, read_offset, write_offset))
            elif step[0] == "upload" and step[1] not in constant_tokens and step[1] in handles:
                steps.append((2, handles[step[1]], step[2]))
        self.steps = steps
        # llvmpipe: the first replays try where the driver's workers wait during each step,
        # and the fastest placement is kept (worker_placement.py).
        self._trials = (worker_placement.PlacementTrials(len(steps))
                        if worker_placement.available() else None)
        self._placed_steps = None
        self.placement = "" if self._trials is None else self._trials.progress()
        self.dispatches = dispatches
        self.programs = list(programs.values())
        self.inputs = [(handles.get(token), by_token[token].nbytes) for token in rec.input_tokens]
        self.outputs = [(handles[token], shape, dtype) for token, shape, dtype in rec.outputs]

    def _view(self, token, fmt, handle, by_token):
        """The texture view of the buffer a token lives in: a weight's own (it goes with the
        weight), else one per shared buffer and format, owned by the plan."""
        if token[0] == "w":
            return buffer_views.view_of(by_token[token].gl, fmt)
        view = self._views.get((id(handle), fmt))
        if view is None:
            view = self._views[(id(handle), fmt)] = buffer_views.view_of_handle(
                handle, fmt, self._objects, f"{self.label} {fmt} view")
        return view

    def _own(self, kind, handle, nbytes):
        self._objects.append(ownership.GLObject(kind, handle, nbytes, self.label))
        return handle

    def _buffer(self, ctx, size, data=None):
        handle = ctx.buffer(data) if data else ctx.buffer(reserve=max(4, size))
        return self._own("buffer", handle, handle.size)

    # -- running -------------------------------------------------------------------------------------
    def valid(self) -> bool:
        """Whether every program and weight it binds is still alive (clear_program_cache or a
        disposed weight invalidate a plan; it is then recorded again)."""
        return (all(obj.handle is not None for obj in self.persistent)
                and all(obj.handle is not None for obj in self.programs))

    def _run_steps(self) -> None:
        if self._placed_steps is not None:
            with worker_placement.caller_pinned() as cpu:
                self._replay(self._placed_steps, cpu)
        elif self._trials is not None:
            self._replay_trial()
        else:
            worker_placement.spread()
            self._replay(self.steps)

    def _replay_trial(self) -> None:
        """One of the first replays on llvmpipe: every dispatch timed, with the workers placed as
        the current trial says; when the trials are over, their choice is kept."""
        trials = self._trials
        with worker_placement.caller_pinned() as cpu:
            if cpu is None:                   # the thread cannot be pinned: never place
                self._trials, self.placement = None, ""
                self._replay(self.steps)
                return
            start = time.perf_counter()
            measured = self._replay(self._with_placement(trials.current), cpu, timed=True)
            total = time.perf_counter() - start
        trials.record(measured, total)
        self.placement = trials.progress()
        if trials.done():
            self._trials = None
            huddled = sum(1 for step, h in zip(self.steps, trials.choice) if h and step[0] == 0)
            self.placement = (f"{huddled} of {self.dispatches} dispatches huddled" if huddled
                              else "all dispatches spread")
            if huddled:
                self._placed_steps = self._with_placement(trials.choice)

    def _with_placement(self, huddle: list[bool]) -> list:
        """The steps with a placement step (kind 3) before each dispatch that changes where the
        workers should be: huddled for the dispatches flagged in `huddle`, spread for the rest."""
        placed, huddled = [(3, worker_placement.spread)], False
        for step, wanted in zip(self.steps, huddle):
            if step[0] == 0 and wanted != huddled:
                placed.append((3, worker_placement.huddle if wanted else worker_placement.spread))
                huddled = wanted
            placed.append(step)
        return placed

    def _replay(self, steps, cpu=None, timed=False) -> list | None:
        """Run the steps. timed: return the seconds each step of self.steps took (None for steps
        other than dispatches); on llvmpipe a dispatch returns when its work is done."""
        ctx = context.get_context()
        barrier = ctx.memory_barrier
        set_uniforms = dispatch.set_uniforms
        clock = time.perf_counter
        times = [] if timed else None
        bound: dict = {}
        for step in steps:
            kind = step[0]
            if kind == 0:
                _, run, binds, images, views, settings, groups = step
                for binding, handle in binds:
                    if bound.get(binding) is not handle:
                        handle.bind_to_storage_buffer(binding)
                        bound[binding] = handle
                for unit, texture, read, write, fmt in images:
                    texture.bind_to_image(unit, read=read, write=write, format=fmt)
                for unit, view in views:
                    view.bind(unit)
                set_uniforms(settings)
                if timed:
                    start = clock()
                    run(*groups)
                    times.append(clock() - start)
                else:
                    run(*groups)
                barrier()
            elif kind == 3:
                step[1](cpu)                  # worker placement (worker_placement.py)
                continue
            elif kind == 1:
                _, dst, src, size, read_offset, write_offset = step
                ctx.copy_buffer(dst, src, size=size, read_offset=read_offset,
                                write_offset=write_offset)
            else:
                step[1].write(step[2])
            if timed and kind != 0:
                times.append(None)
        return times

    def run_arrays(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        for (handle, _), array in zip(self.inputs, arrays):
            if handle is not None and array.size:
                handle.write(np.ascontiguousarray(array))
        self._run_steps()
        results = []
        for handle, shape, dtype in self.outputs:
            out = np.empty(shape, DTYPES[dtype])
            if out.size:
                handle.read_into(out, size=out.nbytes)
            results.append(out)
        return results

    def run_tensors(self, tensors: list[Tensor]) -> list[Tensor]:
        ctx = context.get_context()
        for (handle, _), t in zip(self.inputs, tensors):
            if handle is not None and t.size:
                ctx.copy_buffer(handle, t.gl_buffer(), size=t.nbytes)
        self._run_steps()
        results = []
        try:
            for handle, shape, dtype in self.outputs:
                out = empty(shape, dtype)
                results.append(out)
                if out.size:
                    ctx.copy_buffer(out.gl_buffer(), handle, size=out.nbytes)
        except BaseException:
            ownership.dispose(results)
            raise
        return results

    def release(self) -> None:
        # Newest first: a buffer's views were made after it and must go before it.
        for obj in reversed(self._objects):
            obj.release()
        self._objects.clear()


# -------------------------------------------------------------------------------------------------
# A model's plans
# -------------------------------------------------------------------------------------------------
class _Entry:
    __slots__ = ("status", "reason", "plan", "last", "attempts")

    def __init__(self):
        self.status, self.reason, self.plan, self.last, self.attempts = "recording", "", None, None, 0


class ModelPlans:
    """The plans of one model, by input shapes and requested outputs (a small LRU cache)."""

    def __init__(self, graph, model_name: str, capacity: int = CACHE_SIZE):
        self.graph, self.model_name, self.capacity = graph, model_name, capacity
        self.enabled = plans_enabled_by_default()
        self._entries: OrderedDict = OrderedDict()
        self._refusal = _declared_unplannable(graph)

    # -- predict ---------------------------------------------------------------------------------
    def predict_arrays(self, arrays: list[np.ndarray], dtypes: list[str], wanted) -> list[np.ndarray]:
        """The model on numpy inputs (one batch): replayed when planned, else run eagerly."""
        entry = self._entry(arrays, wanted)
        if entry is not None and entry.status == "planned":
            return entry.plan.run_arrays(arrays)
        from ..tensors.tensor import tensor as upload
        if entry is None or entry.status != "recording":
            # tidy: whatever a layer might leave behind dies with the batch.
            with ownership.tidy():
                inputs = [upload(a, dtype=d) for a, d in zip(arrays, dtypes)]
                outs = self.graph.execute(inputs, wanted)
                results = [out.numpy() for out in outs]
                ownership.dispose(outs)          # (a layer may hand back a kept tensor)
                return results
        recorder = None
        inputs = [upload(a, dtype=d) for a, d in zip(arrays, dtypes)]
        try:
            recorder = Recorder(inputs)
            # The recorder stays on while the scope closes: it must see every temporary freed.
            with ownership.recording(recorder):
                with ownership.tidy():
                    outs = self.graph.execute(inputs, wanted)
                    recorder.set_outputs(outs)
                    recorder.paused = True          # reading the outputs is not part of the call
                    results = [out.numpy() for out in outs]
                    ownership.dispose(outs)
        finally:
            ownership.dispose(inputs)
        if recorder is not None:
            recorder.finish()
            self._learn(entry, recorder, arrays)
        return results

    def predict_tensors(self, tensors: list[Tensor], wanted) -> list[Tensor]:
        """The model on GPU tensors (one batch). Returns new tensors owned by the current scope."""
        if any(t.storage != "buffer" for t in tensors):
            return self.graph.execute(tensors, wanted)
        entry = self._entry(tensors, wanted)
        if entry is not None and entry.status == "planned":
            return entry.plan.run_tensors(tensors)
        if entry is None or entry.status != "recording":
            return self.graph.execute(tensors, wanted)
        recorder = Recorder(tensors)
        with ownership.recording(recorder):
            outs = self.graph.execute(tensors, wanted)
            recorder.set_outputs(outs)
            recorder.paused = True
        recorder.finish()
        self._learn(entry, recorder, tensors)
        return outs

    # -- the cache -------------------------------------------------------------------------------------
    def _entry(self, values, wanted) -> _Entry | None:
        if not self.enabled:
            return None
        key = (tuple((tuple(v.shape), _dtype_name(v)) for v in values), tuple(wanted))
        entry = self._entries.get(key)
        if entry is None:
            entry = _Entry()
            if self._refusal:
                entry.status, entry.reason = "eager", self._refusal
            self._entries[key] = entry
            while len(self._entries) > self.capacity:
                _, evicted = self._entries.popitem(last=False)
                if evicted.plan is not None:
                    evicted.plan.release()
        else:
            self._entries.move_to_end(key)
            if entry.status == "planned" and not entry.plan.valid():
                entry.plan.release()
                entry.__init__()                      # programs or weights changed: record again
        return entry

    def _learn(self, entry: _Entry, recorder: Recorder, values) -> None:
        entry.attempts += 1
        if recorder.hard:
            entry.status, entry.reason, entry.last = "eager", recorder.hard[0], None
            return
        if recorder.soft:
            entry.last = None
            if entry.attempts >= MAX_RECORDINGS:
                entry.status, entry.reason = "eager", recorder.soft[0]
            return
        if entry.last is not None and entry.last.signature() == recorder.signature():
            shapes = "x".join(str(list(v.shape)) for v in values)
            entry.plan = Plan(recorder, f"{ownership.PLAN_LABEL} {self.model_name} {shapes}")
            entry.status, entry.last = "planned", None
            return
        entry.last = recorder
        if entry.attempts >= MAX_RECORDINGS:
            entry.status, entry.last = "eager", None
            entry.reason = ("the dispatches differ from call to call (random numbers without a "
                            "seed, or uniforms computed from the data)")

    # -- inspection and lifetime ---------------------------------------------------------------------
    def info(self) -> list[PlanInfo]:
        found = []
        for (shapes, _), entry in self._entries.items():
            input_shapes = tuple(shape for shape, _ in shapes)
            plan = entry.plan
            if plan is None:
                found.append(PlanInfo(input_shapes, entry.status, entry.reason))
            else:
                found.append(PlanInfo(input_shapes, "planned", "", plan.dispatches,
                                      plan.planned_bytes, plan.peak_live_bytes, plan.naive_bytes,
                                      plan.shared_buffers, plan.placement))
        return found

    @property
    def planned_bytes(self) -> int:
        return sum(e.plan.planned_bytes for e in self._entries.values() if e.plan is not None)

    def clear(self) -> None:
        """Release every plan (the next calls record again)."""
        for entry in self._entries.values():
            if entry.plan is not None:
                entry.plan.release()
        self._entries.clear()

    dispose = clear


def _step_name(step) -> str:
    if step[0] == "dispatch":
        name, defines = step[1]
        return name + "".join(f" {k}={v}" for k, v in defines)
    return step[0]


def _dtype_name(value) -> str:
    return value.dtype if isinstance(value, Tensor) else np.dtype(value.dtype).name


def _declared_unplannable(graph) -> str:
    """Why the model declares itself unplannable (a layer with plannable = False), or ''."""
    from ..compiler.graph import NestedModel
    for layer in graph.layers.values():
        if isinstance(layer, NestedModel):
            reason = _declared_unplannable(layer.graph)
            if reason:
                return reason
        elif getattr(layer, "plannable", True) is False:
            return f"layer '{layer.name}' ({layer.class_name}) declares plannable = False"
    return ""


__all__ = ["ModelPlans", "Plan", "PlanInfo", "Recorder", "written_bindings"]
