"""The work of one dispatch, declared by the op that makes it (`work=` of ops/dispatch.run): its
arithmetic in floating-point operations (2 per multiply-add; 1 per add, compare, max or other
elementwise operation) and the bytes it reads and writes (every operand once, the output once),
both from the op's shapes, not from what the kernel happens to load: a kernel variant that reads
an input twice does the same op's work, so variants compare on one scale. Profiles
(kerasgl/profiler/) divide it by the dispatch's time: achieved GFLOP/s and GB/s, and their share of
the device's peaks (profiler/peak.py).

A replayed execution plan runs no op code: the work of each dispatch a plan records is noted here
under what fixes that dispatch's computation (its program, uniform settings, work groups and the
shapes bound: equal in all four, two dispatches compute the same thing) and looked up when a
profile times the replayed step. Entries go with their program (weak keys); at most
LEDGER_LIMIT per program are kept (the oldest are dropped; a step never found has no work).
"""
from __future__ import annotations

import weakref

LEDGER_LIMIT = 4096

# program -> {(settings, groups, shapes): (flops, bytes)}
_ledger: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def nbytes(*operands) -> int:
    """Bytes of the tensors among `operands` (numbers and None, which a kernel gets as uniforms or
    not at all, count 0); every element is a 32-bit word."""
    return sum(4 * operand.size for operand in operands if hasattr(operand, "size")
               and hasattr(operand, "shape"))


def note(program, settings, groups, shapes, work) -> None:
    """Remember the work of a recorded dispatch (ops/dispatch.run, while a plan records)."""
    try:
        key = (tuple(settings), tuple(groups), tuple(shapes))
        hash(key)
    except TypeError:                 # an unhashable uniform value: the step stays without work
        return
    entries = _ledger.get(program)
    if entries is None:
        entries = _ledger[program] = {}
    elif len(entries) >= LEDGER_LIMIT and key not in entries:
        del entries[next(iter(entries))]
    entries[key] = (int(work[0]), int(work[1]))


def recorded(program, settings, groups, shapes):
    """The (flops, bytes) noted for a dispatch, or None."""
    entries = _ledger.get(program)
    if entries is None:
        return None
    try:
        return entries.get((tuple(settings), tuple(groups), tuple(shapes)))
    except TypeError:
        return None


__all__ = ["LEDGER_LIMIT", "nbytes", "note", "recorded"]
