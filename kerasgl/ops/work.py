"""The work of one dispatch, declared by the op that makes it (`work=` of ops/dispatch.run): its
arithmetic in floating-point operations (2 per multiply-add; 1 per add, compare, max or other
elementwise operation) and the bytes it reads and writes (every operand once, the output once),
both from the op's shapes, not from what the kernel happens to load: a kernel variant that reads
an input twice does the same op's work, so variants compare on one scale. Profiles
(kerasgl/profiler/) divide it by the dispatch's time: achieved GFLOP/s and GB/s, and their share of
the device's peaks (profiler/peak.py).

A replayed execution plan runs no op code: the plan's recorder keeps each dispatch's declared
work with the step it records (plans/recorder.py), and profiles of the replays read it there.
"""
from __future__ import annotations


def nbytes(*operands) -> int:
    """Bytes of the tensors among `operands` (numbers and None, which a kernel gets as uniforms or
    not at all, count 0); every element is a 32-bit word."""
    return sum(4 * operand.size for operand in operands if hasattr(operand, "size")
               and hasattr(operand, "shape"))


__all__ = ["nbytes"]
