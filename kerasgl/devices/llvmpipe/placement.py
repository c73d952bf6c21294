"""Where llvmpipe's compute workers wait during a call: on their own CPUs, or all on the caller's.

llvmpipe hands every dispatch to its worker pool and waits: the calling thread wakes every worker
(one futex broadcast) and sleeps until the work is done. When a worker sits on another CPU that
CPU is usually idle, and waking an idle CPU is slow: on the 2-core CI virtual machine (no halt
polling) each cross-CPU wake-up costs the waker ~11 us and the wakee ~15-40 us, so a dispatch of
one work group, the smallest possible, took ~47 us. With the calling thread and every worker on
one CPU the same dispatch takes ~5 us: the hand-off is two context switches on one CPU. A single
work group only ever occupies one worker, so for it the huddle loses nothing; larger dispatches
need the workers spread over the CPUs to run in parallel.

So, during a kerasgl call that wants it, the calling thread is pinned to the CPU it is on (else
Linux moves it to the idle CPU at its next wake-up, and every hand-off is cross-CPU again) and
the workers are moved there ("huddled") for the dispatches that gain from it; at the end of the
call the thread gets its own CPU mask back. The workers stay huddled until the next dispatch
that wants them spread (every other kerasgl dispatch calls spread() first): moving them back at
once, while the last one is still leaving its task, made a one-group dispatch 8 -> 19 us. Moving
a sleeping worker or pinning the caller is one sched_setaffinity call (~0.4 us).

Which dispatches gain is decided by measurement: an eager dispatch of one work group is always
huddled (it cannot use two workers); an execution plan times each of its dispatches both ways
during its first replays (policy.PlacementReplay, PlacementTrials below) and keeps the
fastest placement.

Only on llvmpipe with its workers pinned (threads.py; KERASGL_PIN_THREADS=0 turns both off)
and where the C library has sched_getcpu (Linux).
"""
from __future__ import annotations

import contextlib
import ctypes
import os

from . import threads as llvmpipe_threads

_huddled_on: int | None = None       # the CPU every worker is on now; None: each on its own
_sched_getcpu = None


def _load_sched_getcpu():
    global _sched_getcpu
    if _sched_getcpu is None:
        try:
            function = ctypes.CDLL(None).sched_getcpu
            function.restype, function.argtypes = ctypes.c_int, []
        except (OSError, AttributeError):
            function = False
        _sched_getcpu = function
    return _sched_getcpu


def available() -> bool:
    """Whether workers can be moved: llvmpipe's workers are pinned and we can tell our CPU."""
    return len(llvmpipe_threads.pinned_workers()) >= 2 and bool(_load_sched_getcpu())


def huddled_on() -> int | None:
    return _huddled_on


def huddle(cpu: int | None) -> None:
    """Move every worker to `cpu` (None: do nothing)."""
    global _huddled_on
    if cpu is None or cpu == _huddled_on:
        return
    try:
        for tid, _ in llvmpipe_threads.pinned_workers():
            os.sched_setaffinity(tid, {cpu})
    except OSError:
        spread()          # a worker ended, or the CPU is not allowed: leave them at home
        return
    _huddled_on = cpu


def spread(_cpu=None) -> None:
    """Every worker back on its own CPU; nothing to do (one global test) when they are there.
    (The argument is ignored: plans call huddle and spread alike with the caller's CPU.)"""
    global _huddled_on
    if _huddled_on is None:
        return
    _huddled_on = None
    for tid, home in llvmpipe_threads.pinned_workers():
        try:
            os.sched_setaffinity(tid, {home})
        except OSError:
            pass          # the thread is gone (driver shut down): nothing to put back


def _pin_caller():
    """Pin the calling thread to the CPU it is on: (that CPU, its old mask), or None where it
    cannot be pinned."""
    cpu = _sched_getcpu()
    try:
        old_mask = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu})
    except OSError:
        return None
    return cpu, old_mask


def _unpin_caller(old_mask) -> None:
    try:
        os.sched_setaffinity(0, old_mask)
    except OSError:
        pass


@contextlib.contextmanager
def caller_pinned():
    """Pin the calling thread to the CPU it is on for the block and yield that CPU; the thread
    has its old mask back when the block ends. Yields None (and changes nothing) where placement
    is not available or the thread cannot be pinned."""
    pinned = _pin_caller() if available() else None
    if pinned is None:
        yield None
        return
    cpu, old_mask = pinned
    try:
        yield cpu
    finally:
        _unpin_caller(old_mask)


def run_huddled(run, groups) -> None:
    """run(*groups) (a moderngl program's dispatch) with the caller pinned to its CPU and every
    worker huddled there: an eager dispatch of one work group (the caller checks available()).
    caller_pinned without the context manager's cost (~1.5 us of 13 per dispatch)."""
    pinned = _pin_caller()
    if pinned is None:
        run(*groups)
        return
    cpu, old_mask = pinned
    try:
        huddle(cpu)
        run(*groups)
    finally:
        _unpin_caller(old_mask)


class PlacementTrials:
    """How a plan learns where the workers should be for each of its steps: its first replays try
    placements, each for ROUNDS replays, and the plan keeps the one whose whole replay was fastest
    (fastest round of each). Whole replays are compared, not just step times, because moving the
    workers has costs no single step shows (a worker moved while it is still leaving its last
    task; the other CPU woken from idle by the first spread step): the small CNN's per-step times
    favoured spreading its first convolution, yet its replay was 0.39 ms so and 0.33 all huddled.

    The placements tried, as one flag per step (True: huddled):
    1. every step spread (every step timed);
    2. every candidate huddled, a candidate being a step that took under LOCAL_CANDIDATE_S spread
       (a longer step has the work to use every worker; huddling it would only lose its parallel
       speed-up, and measuring that would cost a slow replay of a large model);
    3. only the candidates that were clearly faster huddled in 2 (by a tenth), when that differs.
    Trials 2 and 3 are skipped when the candidates took under MIN_SHARE of the spread replay:
    huddling can at most remove their time, and that little is lost in the noise (ResNet50 and
    other large models settle after two replays).
    """

    ROUNDS = 2
    LOCAL_CANDIDATE_S = 200e-6
    MIN_SHARE = 0.02
    MAX_REPLAYS = 3 * ROUNDS

    def __init__(self, steps: int):
        self.steps = steps
        self.spread_times = [float("inf")] * steps
        self.huddled_times = [float("inf")] * steps
        self.tried: list[tuple[list[bool], float]] = []    # (flags, fastest whole replay)
        self.current = [False] * steps
        self.rounds = 0
        self.replays = 0
        self.best_total = float("inf")
        self.choice: list[bool] | None = None               # set when done

    def record(self, step_times: list[float | None], total: float) -> None:
        """The times of one replay made with the flags in self.current."""
        first_trial = not self.tried
        for i, t in enumerate(step_times):
            if t is None:
                continue
            if first_trial:
                self.spread_times[i] = min(self.spread_times[i], t)
            elif self.current[i]:
                self.huddled_times[i] = min(self.huddled_times[i], t)
        self.best_total = min(self.best_total, total)
        self.rounds += 1
        self.replays += 1
        if self.rounds == self.ROUNDS:
            self._next_trial()

    def _next_trial(self) -> None:
        self.tried.append((self.current, self.best_total))
        self.rounds, self.best_total = 0, float("inf")
        if len(self.tried) == 1:
            following = [t < self.LOCAL_CANDIDATE_S for t in self.spread_times]
            at_stake = sum(t for t, c in zip(self.spread_times, following) if c)
            if at_stake < self.MIN_SHARE * self.tried[0][1]:
                following = [False] * self.steps
        elif len(self.tried) == 2:
            following = [c and h < 0.9 * s for c, h, s in
                         zip(self.current, self.huddled_times, self.spread_times)]
            if following == self.current:
                following = [False] * self.steps
        else:
            following = [False] * self.steps
        if any(following):
            self.current = following
        else:
            self.choice = min(self.tried, key=lambda tried: tried[1])[0]

    def done(self) -> bool:
        return self.choice is not None

    def progress(self) -> str:
        return f"trying worker placements (replay {self.replays + 1} of at most {self.MAX_REPLAYS})"


__all__ = ["available", "caller_pinned", "huddle", "huddled_on", "run_huddled", "spread",
           "PlacementTrials"]
