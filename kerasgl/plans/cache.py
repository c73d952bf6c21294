"""A model's plans: predict at each recent input shape, recorded, compiled and replayed.

The first calls at a new input shape (and set of requested outputs) run eagerly under a Recorder;
when two consecutive recordings agree, the second is compiled into a Plan that later calls replay.
A call that cannot be replayed runs eagerly, and PlanInfo says why. The model keeps the plans of
its last `capacity` shapes (CACHE_SIZE unless the model's plan_cache_size says otherwise); a plan
leaving the cache frees its GL objects at once, and clear() frees them all.
"""
from __future__ import annotations

from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .. import settings
from ..ops import gpu_checks, half_activations
from ..runtime import recording
from ..runtime.objects import PLAN_LABEL
from ..tensors import ownership
from ..tensors.tensor import Tensor, tensor as upload
from .plan import Plan
from .recorder import Recorder

PLANS_ENV = settings.SETTINGS["plans"].name   # off: eager predict always (kerasgl/settings.py)
CACHE_SIZE = 3                       # plans kept per model (input shapes x requested outputs)
MAX_RECORDINGS = 4                   # eager recorded calls per shape before giving up on a plan


def plans_enabled_by_default() -> bool:
    return settings.get("plans")


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
    # Where the driver runs the steps, as the device policy reports it (llvmpipe: where its
    # workers wait, kerasgl/devices/llvmpipe/placement.py: "trying ..." during the first
    # replays, then what was kept); "" elsewhere.
    placement: str = ""

    def __str__(self) -> str:
        shapes = ", ".join(str(list(s)) for s in self.input_shapes)
        if self.status != "planned":
            return f"input {shapes}: {self.status}{': ' + self.reason if self.reason else ''}"
        ratio = self.planned_bytes / self.naive_bytes if self.naive_bytes else 0.0
        return (f"input {shapes}: planned, {self.dispatches} dispatches, {self.shared_buffers} "
                f"shared buffers of {_mb(self.planned_bytes)} (peak live {_mb(self.peak_live_bytes)}"
                f"; naive sum {_mb(self.naive_bytes)}, {ratio:.1%})"
                + (f"; driver threads: {self.placement}" if self.placement else ""))


def _mb(n: int) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


class _Entry:
    __slots__ = ("status", "reason", "plan", "last", "attempts")

    def __init__(self):
        self.status, self.reason, self.plan, self.last, self.attempts = "recording", "", None, None, 0


class ModelPlans:
    """The plans of one model, by input shapes and requested outputs (a small LRU cache)."""

    def __init__(self, graph, model_name: str, capacity: int = CACHE_SIZE):
        self.graph, self.model_name = graph, model_name
        self.enabled = plans_enabled_by_default()
        self._entries: OrderedDict = OrderedDict()
        self._capacity = 1
        self.capacity = capacity
        self._refusal = _declared_unplannable(graph)
        self._used: set | None = None       # the keys predict asked for, while tracking()
        # How the model keeps its activations (load_model's activation_dtype): "float16" runs
        # every call in half_activations.running; the model clears the plans when it changes.
        self.activation_dtype = "float32"

    @property
    def capacity(self) -> int:
        """The input shapes (x requested outputs) whose plans are kept; at least 1."""
        return self._capacity

    @capacity.setter
    def capacity(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"The plan cache holds at least 1 input shape; got {value!r} (turn "
                             "plans off with use_plans = False).")
        self._capacity = value
        self._evict()

    def _evict(self) -> None:
        while len(self._entries) > self._capacity:
            _, evicted = self._entries.popitem(last=False)
            if evicted.plan is not None:
                evicted.plan.release()

    @contextmanager
    def tracking(self):
        """Inside: the keys of every entry predict uses, in a set (for Model.warm_up)."""
        outer, self._used = self._used, set()
        try:
            yield self._used
        finally:
            used, self._used = self._used, outer
            if outer is not None:
                outer.update(used)

    # -- predict ---------------------------------------------------------------------------------
    def predict_arrays(self, arrays: list[np.ndarray], dtypes: list[str], wanted) -> list[np.ndarray]:
        """The model on numpy inputs (one batch): replayed when planned, else run eagerly."""
        entry = self._entry(arrays, wanted)
        if entry is not None and entry.status == "planned":
            return entry.plan.run_arrays(arrays)
        if entry is None or entry.status != "recording":
            # tidy: whatever a layer might leave behind dies with the batch. The GPU's checks
            # (an Embedding's index range: ops/gpu_checks.py) are read with the outputs.
            with ownership.tidy(), gpu_checks.collecting() as checks:
                inputs = [upload(a, dtype=d) for a, d in zip(arrays, dtypes)]
                outs = self._execute(inputs, wanted)
                checks.verify()
                results = [out.numpy() for out in outs]
                ownership.dispose(outs)          # (a layer may hand back a kept tensor)
                return results
        # The inputs belong to the outer scope, which closes after the recording: the call must
        # not free a tensor made before it.
        with ownership.tidy():
            inputs = [upload(a, dtype=d) for a, d in zip(arrays, dtypes)]
            recorder = Recorder(inputs)
            # The recorder stays on while the scope closes: it must see every temporary freed.
            with recording.recording(recorder):
                with ownership.tidy(), gpu_checks.collecting() as checks:
                    outs = self._execute(inputs, wanted)
                    recorder.set_outputs(outs, checks.checks)
                    recorder.paused = True          # reading the outputs is not part of the call
                    checks.verify()
                    results = [out.numpy() for out in outs]
                    ownership.dispose(outs)
        recorder.finish()
        self._learn(entry, recorder, arrays)
        return results

    def predict_tensors(self, tensors: list[Tensor], wanted) -> list[Tensor]:
        """The model on GPU tensors (one batch). Returns new tensors owned by the current scope."""
        entry = None
        if all(t.storage == "buffer" for t in tensors):
            entry = self._entry(tensors, wanted)
        if entry is not None and entry.status == "planned":
            return entry.plan.run_tensors(tensors)
        if entry is None or entry.status != "recording":
            with gpu_checks.collecting() as checks:
                outs = self._execute(tensors, wanted)
                _verify_or_dispose(checks, outs)
            return outs
        recorder = Recorder(tensors)
        with recording.recording(recorder):
            with gpu_checks.collecting() as checks:
                outs = self._execute(tensors, wanted)
                recorder.set_outputs(outs, checks.checks)
                recorder.paused = True
                _verify_or_dispose(checks, outs)
        recorder.finish()
        self._learn(entry, recorder, tensors)
        return outs

    def _execute(self, inputs: list[Tensor], wanted) -> list[Tensor]:
        """The graph run eagerly (under a recorder or not), its activations kept as
        activation_dtype says; outputs as float32 buffers either way."""
        with half_activations.running(self.activation_dtype):
            outs = self.graph.execute(inputs, wanted)
            return [half_activations.as_output(out) for out in outs]

    # -- the cache -------------------------------------------------------------------------------------
    def _entry(self, values, wanted) -> _Entry | None:
        if not self.enabled:
            return None
        key = (tuple((tuple(v.shape), _dtype_name(v)) for v in values), tuple(wanted))
        if self._used is not None:
            self._used.add(key)
        entry = self._entries.get(key)
        if entry is None:
            entry = _Entry()
            if self._refusal:
                entry.status, entry.reason = "eager", self._refusal
            self._entries[key] = entry
            self._evict()                 # the oldest: the new entry is the newest
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
            entry.plan = Plan(recorder, f"{PLAN_LABEL} {self.model_name} {shapes}")
            entry.status, entry.last = "planned", None
            return
        entry.last = recorder
        if entry.attempts >= MAX_RECORDINGS:
            entry.status, entry.last = "eager", None
            entry.reason = ("the dispatches differ from call to call (random numbers without a "
                            "seed, or uniforms computed from the data)")

    # -- inspection and lifetime ---------------------------------------------------------------------
    def info(self, keys=None) -> list[PlanInfo]:
        """PlanInfo of every entry, oldest first (`keys`: of those only, as tracking() saw
        them)."""
        found = []
        for key, entry in self._entries.items():
            if keys is not None and key not in keys:
                continue
            shapes = key[0]
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


def _verify_or_dispose(checks, outs) -> None:
    try:
        checks.verify()
    except BaseException:
        ownership.dispose(outs)
        raise


def _dtype_name(value) -> str:
    return value.dtype if isinstance(value, Tensor) else np.dtype(value.dtype).name


def _declared_unplannable(graph) -> str:
    """Why the model declares itself unplannable (a layer with plannable = False), or ''. A
    nested model (a layer with a graph of its own) is looked into."""
    for layer in graph.layers.values():
        inner = getattr(layer, "graph", None)
        if inner is not None:
            reason = _declared_unplannable(inner)
            if reason:
                return reason
        elif getattr(layer, "plannable", True) is False:
            return f"layer '{layer.name}' ({layer.class_name}) declares plannable = False"
    return ""


__all__ = ["CACHE_SIZE", "MAX_RECORDINGS", "ModelPlans", "PlanInfo", "plans_enabled_by_default"]
