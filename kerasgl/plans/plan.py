"""A compiled plan: the GL objects and steps replaying one recorded predict call.

Built from a Recorder (recorder.py): every intermediate gets a place in a shared GL buffer
(memory_plan.assign: tensors whose lifetimes do not overlap share one), textures and constants
uploaded during the call get objects of the plan's own, and each recorded action becomes a step
(steps.py) with its program, bindings and uniform members resolved ahead. The device policy is
told of the steps once (plan_built) and runs every replay (kerasgl/devices/policy.py: the plain
policy runs the steps; llvmpipe's first tries where its workers should wait).
"""
from __future__ import annotations

import numpy as np

from ..ops import dispatch as ops_dispatch, gpu_checks
from ..runtime import buffer_views, context
from ..runtime.objects import GLObject
from ..tensors import ownership
from ..tensors.tensor import DTYPES, Tensor, as_numpy, empty
from . import memory_plan
from .recorder import Recorder, step_name
from .steps import Copy, Dispatch, Replay, Upload

_GL_NEAREST = 0x2600


class Plan:
    """GL objects and a step list replaying one recorded call."""

    def __init__(self, recording: Recorder, label: str):
        self.label = label
        self._objects: list[GLObject] = []
        self._views: dict = {}               # (id(shared buffer), format) -> its texture view
        try:
            self._build(recording)
        except BaseException:
            self.release()
            raise

    def _build(self, rec: Recorder) -> None:
        ctx = context.get_context()
        by_token = rec.by_token()
        # Alive to the end of the call: the outputs and the checks' flag buffers (both are read
        # after the steps).
        outputs = {token for token, _, _ in rec.outputs} | {token for token, _ in rec.checks}
        end = len(rec.steps) + 1
        handles: dict = {}
        self.persistent: list[GLObject] = []
        usages, constants = [], []
        # Textures: those made in the call are shared by lifetime (their usage, bytes counted);
        # one uploaded during the call keeps a texture of its own.
        shared_textures, own_textures = [], []
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
            if seen.kind == "texture" and seen.data is None:
                shared_textures.append((seen, memory_plan.Usage(token, seen.nbytes, first, last)))
            elif seen.kind == "texture":
                own_textures.append(seen)
            elif seen.data is not None and not seen.written and token not in outputs:
                constants.append(seen)             # uploaded once, read only: plan-owned
            else:
                usages.append(memory_plan.Usage(token, max(4, seen.nbytes), first, last))
        own_bytes = sum(seen.nbytes for seen in own_textures)
        tenants = [usage for _, usage in shared_textures]
        self.naive_bytes = sum(u.size for u in usages + tenants) + own_bytes
        self.peak_live_bytes = memory_plan.peak_live_bytes(usages + tenants) + own_bytes
        assignment = memory_plan.assign(usages)
        shared = [self._buffer(ctx, size) for size in assignment.sizes]
        for token, index in assignment.buffer_of.items():
            handles[token] = shared[index]
        self._share_textures(ctx, shared_textures, handles)
        for seen in own_textures:
            handles[seen.token] = self._texture(ctx, seen.extent, seen.texture_dtype, seen.nbytes)
        for seen in constants:
            handles[seen.token] = self._buffer(ctx, len(seen.data), seen.data)
        self.shared_buffers = len(shared)
        self.planned_bytes = sum(obj.nbytes for obj in self._objects)
        constant_tokens = {seen.token for seen in constants}

        steps, programs, dispatches = [], {}, 0
        # Per step of self.steps: (shader and defines, layer, shapes bound, work groups, the op's
        # declared (flops, bytes) or None), for profiles.
        self.step_names: list[str] = []
        self.step_facts: list[tuple] = []
        for step, (layer, shapes, work) in zip(rec.steps, rec.step_facts):
            before = len(steps)
            if step.kind == "dispatch":
                if step.program_object is not None:
                    programs[id(step.program_object)] = step.program_object
                binds = tuple((b, handles[t]) for b, t in enumerate(step.tokens))
                image_binds = tuple((unit, handles[t], r, w, fmt)
                                    for unit, t, r, w, fmt in step.images)
                view_binds = tuple((unit, self._view(t, fmt, handles[t], by_token))
                                   for unit, t, fmt in step.views)
                steps.append(Dispatch(step.program.run, binds, image_binds, view_binds,
                                      step.settings, step.groups))
                dispatches += 1
            elif step.kind == "copy":
                steps.append(Copy(handles[step.dst], handles[step.src], step.size,
                                  step.read_offset, step.write_offset))
            elif step.token not in constant_tokens and step.token in handles:
                steps.append(Upload(handles[step.token], step.data))
            if len(steps) > before:
                self.step_names.append(step_name(step))
                self.step_facts.append((step_name(step), layer, shapes,
                                        getattr(step, "groups", None), work))
        self.steps = steps
        self.dispatches = dispatches
        self.programs = list(programs.values())
        self.inputs = [(handles.get(token), by_token[token].nbytes) for token in rec.input_tokens]
        self.outputs = [(handles[token], shape, dtype) for token, shape, dtype in rec.outputs]
        self.checks = [(handles[token], facts) for token, facts in rec.checks]
        self._flags = np.empty(gpu_checks.FLAG_BYTES // 4, np.int32)
        self._replay_state = Replay(ctx)
        self._facts_by_step = None          # id(step) -> its facts, made on a first profiled replay
        # How this driver replays the steps (kerasgl/devices/): told once, asked every replay.
        self.device = context.policy().plan_built(steps)

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

    def _share_textures(self, ctx, textures, handles: dict) -> None:
        """Textures whose lifetimes do not overlap share one, as buffers do (memory_plan.assign,
        counting rows): a float16-activation model keeps its activations in textures. Kernels
        find an element's texel from the width of the texture bound (texture_operand.glsl,
        texture_to_buffer.comp), so a tenant may live in any texture of its texel format with
        room for it, row by row at that texture's width. Two ways to share, the one needing
        fewer bytes taken: tenants of one width together (a tensor smaller than a texture row
        keeps its own width: no padding), or every tenant of a format in textures a whole
        GL_MAX_TEXTURE_SIZE row wide (more sharing, a row at least each)."""
        full_width = context.limits().max_texture_size
        by_width = _texture_sharing(textures, lambda seen: seen.extent[0])
        full = _texture_sharing(textures, lambda seen: full_width)
        chosen = min(by_width, full, key=lambda plan: sum(t[2] for t in plan))
        for extent, dtype, nbytes, tokens in chosen:
            texture = self._texture(ctx, extent, dtype, nbytes)
            for token in tokens:
                handles[token] = texture

    def _texture(self, ctx, extent, dtype, nbytes):
        texture = ctx.texture(extent, 1, dtype=dtype)
        texture.filter = (_GL_NEAREST, _GL_NEAREST)
        return self._own("texture", texture, nbytes)

    def _own(self, kind, handle, nbytes):
        self._objects.append(GLObject(kind, handle, nbytes, self.label))
        return handle

    def _buffer(self, ctx, size, data=None):
        handle = ctx.buffer(data) if data else ctx.buffer(reserve=max(4, size))
        return self._own("buffer", handle, handle.size)

    # -- running -------------------------------------------------------------------------------------
    @property
    def placement(self) -> str:
        """Where the device runs the steps, as its policy says ("" for the plain policy)."""
        return self.device.placement

    def valid(self) -> bool:
        """Whether every program and weight it binds is still alive (clear_program_cache or a
        disposed weight invalidate a plan; it is then recorded again)."""
        return (all(obj.handle is not None for obj in self.persistent)
                and all(obj.handle is not None for obj in self.programs))

    def run_steps(self) -> None:
        """Replay the steps once, as the device policy runs them (each step timed and reported
        when a profiler is active: kerasgl/profiler/)."""
        if ops_dispatch.profilers:
            self.device.replay(self._profiled_replay)
        else:
            self.device.replay(self._replay)

    def run_only(self, steps: list) -> None:
        """Run `steps` (some of self.steps) once as they are, without the device policy: for
        timing a plan step by step (scripts/probe_plan_steps.py)."""
        self._replay(steps)

    def _replay(self, steps, timed=False) -> list | None:
        """Run `steps` (self.steps, or the device policy's version of them). timed: return what
        each step's run_timed returned (seconds for a dispatch, else None)."""
        replay = self._replay_state
        replay.bound.clear()
        if timed:
            return [step.run_timed(replay) for step in steps]
        for step in steps:
            step.run(replay)
        return None

    def _profiled_replay(self, steps, timed=False) -> list | None:
        """As _replay, each of the plan's steps run by the active profiler, which times it and
        names it by its facts (a device policy's Placement steps run as they are)."""
        facts = self._facts_by_step
        if facts is None:
            facts = self._facts_by_step = {id(s): f for s, f in zip(self.steps, self.step_facts)}
        profiler, replay = ops_dispatch.profilers[-1], self._replay_state
        replay.bound.clear()
        times = []
        for step in steps:
            fact = facts.get(id(step))
            if fact is None:
                times.append(step.run_timed(replay) if timed else step.run(replay))
            else:
                times.append(profiler.replayed_step(step, replay, fact, self.label))
        return times if timed else None

    def run_arrays(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        for (handle, _), array in zip(self.inputs, arrays):
            if handle is not None and array.size:
                handle.write(np.ascontiguousarray(array))
        self.run_steps()
        self._verify()
        results = []
        for handle, shape, dtype in self.outputs:
            out = np.empty(shape, DTYPES[dtype])
            if out.size:
                handle.read_into(out, size=out.nbytes)
            results.append(as_numpy(out, dtype))
        return results

    def run_tensors(self, tensors: list[Tensor]) -> list[Tensor]:
        ctx = context.get_context()
        for (handle, _), t in zip(self.inputs, tensors):
            if handle is not None and t.size:
                ctx.copy_buffer(handle, t.gl_buffer(), size=t.nbytes)
        self.run_steps()
        self._verify()

        def copy_outputs():
            results = []
            for handle, shape, dtype in self.outputs:
                out = empty(shape, dtype)
                results.append(out)
                if out.size:
                    ctx.copy_buffer(out.gl_buffer(), handle, size=out.nbytes)
            return results
        return ownership.tidy.run(copy_outputs)

    def _verify(self) -> None:
        """Read the flag buffers of the GPU's checks (zeroed by the replay's uploads) and raise
        the first failed check's error, as the eager call would (ops/gpu_checks.py)."""
        for handle, facts in self.checks:
            handle.read_into(self._flags, size=gpu_checks.FLAG_BYTES)
            failed = gpu_checks.error_of(facts, self._flags)
            if failed is not None:
                raise failed

    def release(self) -> None:
        # Newest first: a buffer's views were made after it and must go before it.
        for obj in reversed(self._objects):
            obj.release()
        self._objects.clear()


__all__ = ["Plan"]


def _texture_sharing(textures, width_of) -> list:
    """Plan._share_textures's textures ((recorded texture, its usage) pairs) if each lives in one
    `width_of(it)` texels wide: [(extent, texel format, bytes, tokens of its tenants)], tenants of one texture sharing
    its width and format, and never alive at once (memory_plan.assign over their rows)."""
    groups: dict = {}
    for seen, usage in textures:
        groups.setdefault((width_of(seen), seen.texture_dtype), []).append((seen, usage))
    shared = []
    for (width, dtype), members in groups.items():
        first = members[0][0]
        texel_bytes = first.nbytes // (first.extent[0] * first.extent[1])
        assignment = memory_plan.assign(
            [memory_plan.Usage(s.token, -(-s.extent[0] * s.extent[1] // width), u.first, u.last)
             for s, u in members])
        tenants: list = [[] for _ in assignment.sizes]
        for token, index in assignment.buffer_of.items():
            tenants[index].append(token)
        shared += [((width, rows), dtype, width * rows * texel_bytes, tokens)
                   for rows, tokens in zip(assignment.sizes, tenants)]
    return shared
