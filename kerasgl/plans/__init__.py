"""Execution plans: a predict call recorded once per input shape and replayed, with buffers shared
between intermediates whose lifetimes do not overlap.

The first predict calls at a new input shape run eagerly (graph.execute: every op allocates its
output, every intermediate is freed after its last use) under a recorder that sees every GPU
action (recorder.py). When two consecutive recordings agree (same programs, uniforms, groups and
constant data: nothing about the call depends on the call), the recording is compiled into a plan
(plan.py):

- every intermediate gets a place in a shared GL buffer; tensors whose lifetimes do not overlap
  share one (memory_plan.assign, TFLite's greedy-by-size);
- the dispatch list is kept with its programs, bindings and uniform members resolved ahead, as
  named steps (steps.py), which the device policy replays (kerasgl/devices/).

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

The plans' GL objects belong to the model (registered in runtime/objects.py with labels starting
"plan"; memory().planned_bytes counts them) and are freed with it, or when a plan leaves the
model's small cache of recent input shapes (cache.py).
"""
from .cache import CACHE_SIZE, MAX_RECORDINGS, ModelPlans, PlanInfo, plans_enabled_by_default
from .plan import Plan
from .recorder import Recorder, current_layer, written_bindings

__all__ = ["CACHE_SIZE", "MAX_RECORDINGS", "ModelPlans", "Plan", "PlanInfo", "Recorder",
           "current_layer", "plans_enabled_by_default", "written_bindings"]
