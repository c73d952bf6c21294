"""Sharing GPU buffers between tensors whose lifetimes do not overlap.

Given every intermediate tensor of a compiled predict call with its size and the interval of steps
during which it must hold its data ([first, last], inclusive), `assign` places each one in a
shared buffer so that no two tensors of one buffer are alive at once. The strategy is TFLite GPU
delegate's "greedy by size" for shared objects: tensors are taken largest first, and each goes to
the best-fitting shared buffer that is free over its whole interval (the smallest one, since every
buffer is at least as large as the tensor being placed: its first tenant was larger), else to a
new buffer of its size. Large tensors get placed while the choice is widest, and the small ones
fill the gaps, which lands close to the peak of live bytes on convolutional networks.

Pure Python, no GL: plan.py turns the answer into GL buffers.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Usage:
    """One tensor to place: `size` bytes alive from step `first` to step `last`, both included."""
    key: object
    size: int
    first: int
    last: int

    def __post_init__(self):
        if self.size < 0 or self.last < self.first:
            raise ValueError(f"A usage needs size >= 0 and first <= last. Received {self!r}.")


@dataclass
class SharedBuffer:
    size: int
    intervals: list = field(default_factory=list)    # (first, last) of each tenant

    def free_over(self, first: int, last: int) -> bool:
        return all(last < a or b < first for a, b in self.intervals)


@dataclass(frozen=True)
class Assignment:
    buffer_of: dict          # usage key -> index into sizes
    sizes: list              # bytes of each shared buffer

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)


def assign(usages) -> Assignment:
    """Greedy by size: every usage placed in a shared buffer; buffers' tenants never overlap in
    time. Deterministic (ties broken by first use, then by input order)."""
    usages = list(usages)
    keys = [u.key for u in usages]
    if len(set(keys)) != len(keys):
        raise ValueError("Usage keys must be unique.")
    order = sorted(range(len(usages)), key=lambda i: (-usages[i].size, usages[i].first, i))
    buffers: list[SharedBuffer] = []
    buffer_of = {}
    for i in order:
        usage = usages[i]
        best = None
        for index, buffer in enumerate(buffers):
            if buffer.size >= usage.size and buffer.free_over(usage.first, usage.last):
                if best is None or buffer.size < buffers[best].size:
                    best = index
        if best is None:
            buffers.append(SharedBuffer(usage.size))
            best = len(buffers) - 1
        buffers[best].intervals.append((usage.first, usage.last))
        buffer_of[usage.key] = best
    return Assignment(buffer_of, [b.size for b in buffers])


def peak_live_bytes(usages) -> int:
    """The most bytes alive at any one step: a lower bound for any assignment."""
    events = []
    for u in usages:
        events.append((u.first, 0, u.size))       # allocations before frees at the same step:
        events.append((u.last + 1, -1, -u.size))  # a tensor dies after its last step
    live = peak = 0
    for _, _, delta in sorted(events, key=lambda e: (e[0], e[1])):
        live += delta
        peak = max(peak, live)
    return peak


def naive_bytes(usages) -> int:
    """Every tensor in a buffer of its own."""
    return sum(u.size for u in usages)
