"""The llvmpipe policy: Mesa's software driver, whose compute dispatches run on a pool of CPU
worker threads. Its hooks pin those workers when the context is made (threads.py), huddle them
on the caller's CPU for small dispatches (placement.py), let each plan's first replays choose
where they wait (PlacementReplay below) and start the compile-ahead helper for large models
(compile_ahead.py). Picked only when GL_RENDERER names llvmpipe (kerasgl/devices/__init__.py)."""
from __future__ import annotations

import time

from ..policy import ContextFacts, DevicePolicy, Placement, PlanReplay
from . import compile_ahead, placement, threads


class LlvmpipePolicy(DevicePolicy):
    name = "llvmpipe"
    # Whether the workers can be moved (placement.available()): known once they are pinned, which
    # happens only here, and asked on every dispatch (three calls saved each time).
    placing = False

    def context_created(self, facts: ContextFacts) -> None:
        threads.pin_new_workers(facts.threads_before)
        self.placing = placement.available()

    def compute_threads(self) -> int | None:
        return threads.count()

    def pinned_cpus(self) -> tuple:
        return threads.pinned_cpus()

    def dispatch(self, run, groups: tuple) -> None:
        if groups == (1, 1, 1) and self.placing:
            # One work group runs on one worker: wake it on this CPU (placement.py).
            placement.run_huddled(run, groups)
        else:
            placement.spread()
            run(*groups)

    def plan_built(self, steps: list) -> PlanReplay:
        return PlacementReplay(steps) if self.placing else SpreadReplay(steps)

    def model_loaded(self, path, spec, describe):
        # A helper process compiles the shaders from the last layer backwards while the first
        # predict compiles them forwards (compile_ahead.py).
        return compile_ahead.maybe_start(path, compile_ahead.layer_count(spec), describe)


class SpreadReplay(PlanReplay):
    """Where the workers cannot be moved: every replay with them on their own CPUs (an eager
    one-group dispatch may have left them huddled)."""

    def replay(self, run) -> None:
        placement.spread()
        run(self.steps)


class PlacementReplay(PlanReplay):
    """The first replays try where the driver's workers wait during each step, timing each
    (placement.PlacementTrials), and the fastest placement is kept: later replays run with the
    caller pinned and Placement steps moving the workers where the choice changes."""

    def __init__(self, steps: list):
        super().__init__(steps)
        self.dispatches = sum(1 for step in steps if step.is_dispatch)
        self.trials: placement.PlacementTrials | None = placement.PlacementTrials(len(steps))
        self.placed: list | None = None       # the steps with placements, once chosen
        self.placement = self.trials.progress()
        self.cpu: int | None = None           # the caller's CPU during a pinned replay
        self._to_huddle = Placement(self._huddle)
        self._to_spread = Placement(placement.spread)

    def _huddle(self) -> None:
        placement.huddle(self.cpu)

    def replay(self, run) -> None:
        if self.placed is not None:
            with placement.caller_pinned() as cpu:
                self.cpu = cpu
                run(self.placed)
        elif self.trials is not None:
            self._trial(run)
        else:
            placement.spread()
            run(self.steps)

    def _trial(self, run) -> None:
        """One of the first replays: every dispatch timed, with the workers placed as the current
        trial says; when the trials are over, their choice is kept."""
        trials = self.trials
        with placement.caller_pinned() as cpu:
            if cpu is None:                   # the thread cannot be pinned: never place
                self.trials, self.placement = None, ""
                run(self.steps)
                return
            self.cpu = cpu
            start = time.perf_counter()
            placed = self.with_placement(trials.current)
            times = run(placed, timed=True)
            total = time.perf_counter() - start
        trials.record([t for step, t in zip(placed, times) if not isinstance(step, Placement)],
                      total)
        self.placement = trials.progress()
        if trials.done():
            self.trials = None
            huddled = sum(1 for step, h in zip(self.steps, trials.choice) if h and step.is_dispatch)
            self.placement = (f"{huddled} of {self.dispatches} dispatches huddled" if huddled
                              else "all dispatches spread")
            if huddled:
                self.placed = self.with_placement(trials.choice)

    def with_placement(self, huddle: list[bool]) -> list:
        """The steps with a Placement step before each dispatch that changes where the workers
        should be: huddled for the dispatches flagged in `huddle`, spread for the rest."""
        placed, huddled = [self._to_spread], False
        for step, wanted in zip(self.steps, huddle):
            if step.is_dispatch and wanted != huddled:
                placed.append(self._to_huddle if wanted else self._to_spread)
                huddled = wanted
            placed.append(step)
        return placed


__all__ = ["LlvmpipePolicy", "PlacementReplay", "SpreadReplay"]
