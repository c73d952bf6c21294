"""Checks whose answer the GPU writes during a call and the CPU reads once, at the call's end.

An op that must refuse bad data it cannot see on the CPU (an Embedding's indices: ops/embedding_rows.py)
has its shader count the bad values into a small flag buffer, [count, an example]. Reading that
buffer right after the dispatch would be a read-back in the middle of predict, which no execution
plan can replay (plans/recorder.py), so inside `collecting()` (predict's graph runs in one: see
plans/cache.py) the op hands the buffer over with `defer` instead, and the buffers are read
together with the outputs: `Collector.verify()` raises the first failed check's error. A plan
records the flag buffers as it records the outputs, zeroes them with its uploads on every replay
and reads them after its steps (plans/plan.py). Outside a collector (an op called on its own) the
op reads its flags at once, as before.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..errors import InputValueError
from ..tensors import ownership

FLAG_BYTES = 8           # int32 [count of bad values, one of them]


def index_error(facts: tuple, count: int, example: int) -> InputValueError:
    """The error of a failed index check; facts: ("index", who, rows)."""
    _, who, rows = facts
    # A value the input holds, not a shape: InputValueError (a ValueError).
    return InputValueError(f"{who}: {count} index(es) out of range for a lookup table of {rows} "
                           f"rows (valid: 0 to {rows - 1}, or -{rows} to -1 from the end); for "
                           f"example {example}.")


_ERRORS = {"index": index_error}


def error_of(facts: tuple, flags) -> InputValueError | None:
    """The error flags ([count, example], as numbers) mean, or None when the check passed."""
    count, example = int(flags[0]), int(flags[1])
    return _ERRORS[facts[0]](facts, count, example) if count else None


class Collector:
    """The checks deferred during one call: (flag tensor, facts) pairs, in order."""
    __slots__ = ("checks",)

    def __init__(self):
        self.checks: list[tuple] = []

    def verify(self) -> None:
        """Read every flag buffer, free them, and raise the first failed check's error."""
        failed = None
        try:
            for flags, facts in self.checks:
                failed = failed or error_of(facts, flags.numpy())
        finally:
            self.dispose()
        if failed is not None:
            raise failed

    def dispose(self) -> None:
        ownership.dispose([flags for flags, _ in self.checks])
        self.checks.clear()


_collectors: list[Collector] = []


@contextmanager
def collecting():
    """Collect the checks of the ops run inside (innermost collector wins). The caller calls
    verify() when it reads the outputs; whatever it has not verified is freed at the end."""
    collector = Collector()
    _collectors.append(collector)
    try:
        yield collector
    finally:
        _collectors.remove(collector)
        collector.dispose()


def defer(flags, facts: tuple) -> bool:
    """Hand a flag tensor to the innermost collector (which frees it); False when there is none
    and the caller must check now."""
    if not _collectors:
        return False
    _collectors[-1].checks.append((ownership.keep(flags), facts))
    return True


def check_now(flags, facts: tuple) -> None:
    """Read one flag tensor at once and raise its error (the op's caller frees the tensor)."""
    failed = error_of(facts, flags.numpy())
    if failed is not None:
        raise failed


def zeros():
    """A fresh flag tensor's contents."""
    return np.zeros(2, np.int32)


__all__ = ["Collector", "FLAG_BYTES", "check_now", "collecting", "defer", "error_of",
           "index_error", "zeros"]
