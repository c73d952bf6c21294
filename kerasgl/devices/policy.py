"""The device policy interface, and the plain policy: every driver without quirks kerasgl works
around (NVIDIA, AMD, Intel, ...), whose hooks do nothing or just run what they are given.

The core calls a policy at a few named points and nowhere else decides anything per driver:

    context_created(facts)         once, just after the GL context is made (runtime/context.py)
    compute_threads(), pinned_cpus()   what `kerasgl info` reports about the driver's threads
    driver_notes()                 lines `kerasgl info` prints about what the policy does
    tuning_defaults()              the kernel variants this driver runs by default, measured on
                                   it (runtime/tuning.py's Tuning fields -> values; {} keeps the
                                   generic GPU defaults)
    dispatch(run, groups)          every eager dispatch: run(*groups) is the program's dispatch
                                   (ops/dispatch.py)
    plan_built(steps)              once per execution plan: returns the PlanReplay that runs the
                                   plan's steps on every replay (plans/plan.py)
    model_loaded(path, spec, describe)   when load_model reads a file: returns per-model hooks
                                   (first_predict_done(), model_disposed()) or None (model.py)

A plan's steps are objects with run(replay) and run_timed(replay) (seconds for a dispatch, else
None) and an is_dispatch flag; a policy may put Placement steps of its own among them. The
context picks one policy when it is made (devices.policy_for); kerasgl/devices/llvmpipe/ holds
the only other one.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ContextFacts:
    """What a policy is told when the context has been made."""
    renderer: str             # GL_RENDERER
    version: str              # GL_VERSION
    threads_before: dict      # thread id -> name of this process's threads before it was made


class Placement:
    """A step a policy puts among a plan's steps: not a GPU action, it changes where the driver
    runs the next ones (`action()`, no arguments). Timed replays leave it out of the times only
    the policy reads."""
    __slots__ = ("action",)
    is_dispatch = False

    def __init__(self, action):
        self.action = action

    def run(self, replay) -> None:
        self.action()

    def run_timed(self, replay) -> None:
        self.action()


class PlanReplay:
    """How one plan's steps are replayed: all of them, in order, every time.

    `replay(run)` gets the plan's step loop, `run(steps, timed=False)` (returning, when timed,
    one entry per step: seconds for a dispatch, else None). `placement` is what plan_info() says
    about where the steps run ("" here)."""
    placement = ""

    def __init__(self, steps: list):
        self.steps = steps

    def replay(self, run) -> None:
        run(self.steps)


class DevicePolicy:
    """The plain policy (see the module's docstring for when each hook is called)."""
    name = "plain"

    def context_created(self, facts: ContextFacts) -> None:
        pass

    def compute_threads(self) -> int | None:
        """The threads the driver's compute dispatches run on, where kerasgl knows (else None)."""
        return None

    def pinned_cpus(self) -> tuple:
        """The CPUs kerasgl pinned the driver's threads to (() when it pinned nothing)."""
        return ()

    def driver_notes(self) -> tuple:
        """Lines for `kerasgl info` about what this policy does with the driver (() for none)."""
        return ()

    def tuning_defaults(self) -> dict:
        """Kernel-variant choices (runtime/tuning.Tuning field -> value) measured for this driver;
        the plain policy keeps the generic GPU defaults of Tuning itself."""
        return {}

    def dispatch(self, run, groups: tuple) -> None:
        run(*groups)

    def plan_built(self, steps: list) -> PlanReplay:
        return PlanReplay(steps)

    def model_loaded(self, path, spec, describe):
        """A model file is being loaded (`spec`: its ModelSpec; `describe()`: what besides the
        file its compiled programs depend on). Returns an object with first_predict_done() and
        model_disposed(), or None when there is nothing to tell it."""
        return None


__all__ = ["ContextFacts", "DevicePolicy", "Placement", "PlanReplay"]
