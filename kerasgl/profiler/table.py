"""A profile's events summed per layer and per kernel: `Profile.table()` and `kerasgl profile`.

Each row: calls, total and mean time, and the share of the whole. The time a row is ranked and
shared by is the GPU time where the driver gave timestamps, else the CPU time (a driver without
GL_TIMESTAMP bits); both totals are shown either way.
"""
from __future__ import annotations

from dataclasses import dataclass

SORT_KEYS = ("gpu_time", "cpu_time", "calls", "name")
NO_LAYER = "(no layer)"          # ops called outside a model's layers (user ops, batch copies)


@dataclass(frozen=True)
class Row:
    name: str
    calls: int
    gpu_time: float | None       # seconds, all calls (None without GPU timing)
    cpu_time: float              # seconds, all calls
    share: float                 # of the profile's whole time (GPU where recorded, else CPU)

    @property
    def mean_gpu_time(self) -> float | None:
        return None if self.gpu_time is None else self.gpu_time / self.calls

    @property
    def mean_cpu_time(self) -> float:
        return self.cpu_time / self.calls


def rows(profile, by: str = "layer", sort_by: str = "gpu_time") -> list[Row]:
    """One Row per layer (by="layer") or per kernel (by="kernel"), sorted by `sort_by` (one of
    SORT_KEYS; the largest first, names alphabetically)."""
    if by not in ("layer", "kernel"):
        raise ValueError(f"rows(by=...) takes 'layer' or 'kernel', got {by!r}.")
    if sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by must be one of {', '.join(SORT_KEYS)}; got {sort_by!r}.")
    groups: dict[str, list] = {}
    for event in profile.events:
        name = (event.layer or NO_LAYER) if by == "layer" else event.kernel
        groups.setdefault(name, []).append(event)
    whole = sum(profile.time_of(e) for e in profile.events) or 1.0
    found = []
    for name, events in groups.items():
        gpu = sum(e.gpu_time or 0.0 for e in events) if profile.gpu_timing else None
        found.append(Row(name, len(events), gpu, sum(e.cpu_time for e in events),
                         sum(profile.time_of(e) for e in events) / whole))
    if sort_by == "name":
        return sorted(found, key=lambda r: r.name)
    if sort_by == "gpu_time" and not profile.gpu_timing:
        sort_by = "cpu_time"
    return sorted(found, key=lambda r: (-getattr(r, sort_by), r.name))


def format_table(profile, sort_by: str = "gpu_time", limit: int | None = None) -> str:
    """The header (counts, times, memory), then the layers and the kernels (`limit`: the first
    rows of each only)."""
    lines = header(profile)
    for by in ("layer", "kernel"):
        table_rows = rows(profile, by, sort_by)
        shown = table_rows if limit is None else table_rows[:limit]
        lines += ["", f"By {by} (sorted by {sort_by}{'' if profile.gpu_timing else ', CPU times'}"
                      f"; {len(table_rows)} {by}s"
                      + (f", first {len(shown)} shown" if len(shown) < len(table_rows) else "")
                      + "):"]
        lines += _format_rows(shown, by, profile.gpu_timing)
    return "\n".join(lines)


def header(profile) -> list[str]:
    events = profile.events
    replayed = sum(1 for e in events if e.replayed)
    gpu = (f"GPU {_ms(profile.gpu_time)}, " if profile.gpu_timing else "")
    lines = [f"{len(events)} GPU actions ({replayed} replayed from execution plans, "
             f"{len(events) - replayed} eager) in {_ms(profile.wall_time)} wall; "
             f"{gpu}CPU {_ms(profile.cpu_time)} in the dispatch calls",
             f"memory: {_mb(profile.allocated_total)} allocated, {_mb(profile.freed_total)} "
             f"freed, peak {_mb(profile.peak_bytes)} live (start {_mb(profile.bytes_at_start)}, "
             f"end {_mb(profile.bytes_at_end)})"]
    if profile.note:
        lines.append(f"note: {profile.note}")
    return lines


def _format_rows(table_rows: list[Row], by: str, gpu_timing: bool) -> list[str]:
    # The name last: a kernel's name (its shader and defines) is long, and whole.
    columns = ["calls"] + (["GPU total", "GPU mean"] if gpu_timing else []) + \
        ["CPU total", "CPU mean", "share"]
    lines = ["".join(f"{c:>12}" for c in columns) + f"  {by}"]
    for row in table_rows:
        cells = [str(row.calls)]
        if gpu_timing:
            cells += [_ms(row.gpu_time), _ms(row.mean_gpu_time)]
        cells += [_ms(row.cpu_time), _ms(row.mean_cpu_time), f"{row.share:.1%}"]
        lines.append("".join(f"{c:>12}" for c in cells) + f"  {row.name}")
    return lines


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3f} ms" if seconds < 10 else f"{seconds:.2f} s"


def _mb(n: int) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


__all__ = ["NO_LAYER", "Row", "SORT_KEYS", "format_table", "header", "rows"]
