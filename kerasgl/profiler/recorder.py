"""The profile: every dispatch (and buffer copy) made inside `with kg.profile() as p:`.

While a Profile is active it is the innermost entry of ops/dispatch.py's `profilers` list, and
two places hand it their GPU work: ops/dispatch.run (an eager dispatch or copy: `dispatch`,
`copy`) and an execution plan's replay (plans/plan.py picks its profiled step loop when the list
is not empty: `replayed_step`). Each becomes an Event with the layer running (the graph
executor's `current_layer`), the kernel (shader file and defines, as plans name their steps), the
shapes bound and the work groups, its CPU time, its GPU time from two timer queries
(timer_queries.py) and the GL bytes made and freed since the event before, with the bytes live
after it (runtime/objects.py's running totals). A dispatch also carries its program's work group
size (runtime/program_facts.py) and invocations, and the work its op declared (ops/work.py:
flops and bytes, from the op's shapes; a replayed step finds what its op declared when the plan
was recorded), from which the table and the plot make achieved rates.

Off, nothing of this runs: no query object exists, a dispatch tests one list, a plan replay one.
Query results are read when the profile ends (the GPU is never waited for while recording), and
its queries are deleted then. A profile records the thread it is used on (kerasgl's GL thread):
a WorkerModel's predict runs on its worker and is profiled from there.
"""
from __future__ import annotations

import math
import time

from ..ops import dispatch as ops_dispatch
from ..plans.recorder import current_layer, program_name
from ..runtime import context, objects, program_facts, shaders
from ..tensors.tensor import Tensor
from . import timer_queries

_clock = time.perf_counter
NO_TIMESTAMPS = ("this driver's GL_TIMESTAMP counter has 0 bits (GL allows it): no GPU times, "
                 "CPU times only")


class Event:
    """One dispatch or copy. Times in seconds from the profile's start; gpu_* None without GPU
    timing. bytes_allocated / bytes_freed: GL bytes made / freed since the event before (an op
    allocates its output just before its dispatch); live_bytes: every GL byte kerasgl holds
    after it. For a dispatch: local_size, its program's work group size (x, y, z); invocations,
    work groups times that; flops and bytes, the arithmetic (2 per multiply-add) and the bytes
    read + written its op declared (ops/work.py), None where it declared none (and for copies)."""
    __slots__ = ("kind", "layer", "kernel", "shapes", "groups", "plan", "cpu_start", "cpu_time",
                 "gpu_start", "gpu_time", "bytes_allocated", "bytes_freed", "live_bytes",
                 "local_size", "invocations", "flops", "bytes", "_queries")

    def __init__(self, kind, layer, kernel, shapes, groups, plan, local_size=None, work=None):
        self.kind, self.layer, self.kernel = kind, layer, kernel
        self.shapes, self.groups, self.plan = shapes, groups, plan
        self.local_size = local_size
        self.invocations = (None if local_size is None or groups is None
                            else math.prod(local_size) * math.prod(groups))
        self.flops, self.bytes = (None, None) if work is None else work
        self.cpu_start = self.cpu_time = 0.0
        self.gpu_start = self.gpu_time = None
        self.bytes_allocated = self.bytes_freed = self.live_bytes = 0
        self._queries = None

    @property
    def replayed(self) -> bool:
        """Whether an execution plan's replay ran it (else an eager call did)."""
        return bool(self.plan)

    @property
    def group_invocations(self) -> int | None:
        """Invocations per work group (None for a copy)."""
        return None if self.local_size is None else math.prod(self.local_size)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__ if name != "_queries"}

    def __repr__(self) -> str:
        gpu = "" if self.gpu_time is None else f", gpu {self.gpu_time * 1e3:.3f} ms"
        return (f"Event({self.kind} {self.kernel!r} in {self.layer!r}, cpu "
                f"{self.cpu_time * 1e3:.3f} ms{gpu}, live {self.live_bytes} B)")


def kernel_name(shader: str, defines: dict | None) -> str:
    """What profiles call a program: its shader file and the defines set, as a plan names its
    steps (plans.recorder.program_name)."""
    return program_name(shaders.program_key(shader, defines))


class Profile:
    """What `kg.profile()` returns; see the package's docstring for the whole tour."""

    def __init__(self, gpu_timing: bool = True):
        self.events: list[Event] = []
        self.gpu_timing = bool(gpu_timing)
        self.note = "" if gpu_timing else "GPU timing off (kg.profile(gpu_timing=False))"
        self.wall_time = 0.0            # seconds between entering and leaving the block
        self.bytes_at_start = self.bytes_at_end = 0
        self.allocated_total = self.freed_total = 0
        self.active = False
        self._pool: timer_queries.QueryPool | None = None
        self._pending: list[Event] = []
        self._start = 0.0
        self._gpu_origin = 0

    # -- the block --------------------------------------------------------------------------------
    def __enter__(self) -> "Profile":
        if self.active or self.events:
            raise RuntimeError("a kg.profile() block runs once; start another for a new profile")
        context.get_context()
        if self.gpu_timing and not timer_queries.supported():
            self.gpu_timing, self.note = False, NO_TIMESTAMPS
        if self.gpu_timing:
            self._pool = timer_queries.QueryPool()
            self._gpu_origin = timer_queries.gpu_now_ns()
        totals = objects.totals
        self._made, self._released = totals.made, totals.released
        self._made_at_start, self._released_at_start = totals.made, totals.released
        self.bytes_at_start = totals.made - totals.released
        self._start = _clock()
        self.active = True
        ops_dispatch.profilers.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        self.wall_time = _clock() - self._start
        ops_dispatch.profilers.remove(self)
        self.active = False
        totals = objects.totals
        self.bytes_at_end = totals.made - totals.released
        self.allocated_total = totals.made - self._made_at_start
        self.freed_total = totals.released - self._released_at_start
        try:
            self._resolve()
        finally:
            if self._pool is not None:
                self._pool.release()
                self._pool = None
        return False

    # -- the hooks --------------------------------------------------------------------------------
    def dispatch(self, shader, defines, buffers, groups, run, work=None) -> None:
        """An eager dispatch (ops/dispatch.run): run it through the device policy, timed. `run`
        is the program's bound run method; `work` what the op declared (ops/work.py)."""
        event = Event("dispatch", current_layer.name, kernel_name(shader, defines),
                      tuple(tuple(b.shape) for b in buffers if isinstance(b, Tensor)), groups, "",
                      program_facts.local_size(run.__self__), work)
        self._measure(event, context.policy().dispatch, run, groups)

    def copy(self, dst, src, size, read_offset, write_offset) -> None:
        """An eager GPU-to-GPU copy (ops/dispatch.copy_buffer)."""
        event = Event("copy", current_layer.name, "copy", (tuple(dst.shape), tuple(src.shape)),
                      None, "")
        ctx = context.get_context()
        self._measure(event, lambda: ctx.copy_buffer(dst.gl_buffer(), src.gl_buffer(), size=size,
                                                     read_offset=read_offset,
                                                     write_offset=write_offset))

    def replayed_step(self, step, replay, fact, plan_label: str):
        """One step of a plan's replay (plans/plan.py), `fact` its (kernel, layer, shapes,
        groups). Returns what step.run_timed would: the CPU seconds of a dispatch, else None."""
        kernel, layer, shapes, groups, work = fact
        if step.is_dispatch:
            # A plan's Dispatch step (plans/steps.py) runs its program's bound run method; the
            # work is what the op declared when the plan was recorded.
            event = Event("dispatch", layer, kernel, shapes, groups, plan_label,
                          program_facts.local_size(step.dispatch.__self__), work)
        else:
            event = Event(kernel, layer, kernel, shapes, groups, plan_label)
        self._measure(event, step.run, replay)
        return event.cpu_time if step.is_dispatch else None

    def _measure(self, event: Event, action, *args) -> None:
        totals = objects.totals
        made, released = totals.made, totals.released
        event.bytes_allocated, event.bytes_freed = made - self._made, released - self._released
        self._made, self._released = made, released
        pool = self._pool
        start = _clock()
        if pool is not None:
            first = pool.stamp()
            action(*args)
            event._queries = (first, pool.stamp())
        else:
            action(*args)
        end = _clock()
        event.cpu_start, event.cpu_time = start - self._start, end - start
        event.live_bytes = totals.made - totals.released
        self.events.append(event)
        if pool is not None:
            self._pending.append(event)
            if len(self._pending) * 2 >= timer_queries.RESOLVE_AFTER:
                self._resolve()

    def _resolve(self) -> None:
        """Read the timestamps of the events still waiting (the queries go back to the pool)."""
        pool, origin = self._pool, self._gpu_origin
        for event in self._pending:
            first, last = event._queries
            begin, end = pool.result(first), pool.result(last)
            event.gpu_start, event.gpu_time = (begin - origin) / 1e9, max(0, end - begin) / 1e9
            event._queries = None
        self._pending.clear()

    # -- what was recorded ------------------------------------------------------------------------
    @property
    def gpu_time(self) -> float | None:
        """Seconds of GPU time of every event (None without GPU timing)."""
        if not self.gpu_timing:
            return None
        return sum(e.gpu_time or 0.0 for e in self.events)

    @property
    def cpu_time(self) -> float:
        """Seconds the dispatch calls themselves took on the CPU."""
        return sum(e.cpu_time for e in self.events)

    @property
    def peak_bytes(self) -> int:
        """The most GL bytes kerasgl held at any event (and at the block's start and end)."""
        return max([self.bytes_at_start, self.bytes_at_end] + [e.live_bytes for e in self.events])

    def time_of(self, event: Event) -> float:
        """The time the profile ranks an event by: GPU time where recorded, else CPU time."""
        return event.gpu_time if self.gpu_timing and event.gpu_time is not None else event.cpu_time

    def __repr__(self) -> str:
        state = "recording" if self.active else f"{len(self.events)} events"
        return f"<kerasgl.Profile {state}>"
