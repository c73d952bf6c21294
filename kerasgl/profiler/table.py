"""A profile's events summed per layer and per kernel: `Profile.table()` and `kerasgl profile`.

Each row: calls, total and mean time, and the share of the whole. The time a row is ranked and
shared by is the GPU time where the driver gave timestamps, else the CPU time (a driver without
GL_TIMESTAMP bits); both totals are shown either way.

Then how well the row used the device: the work its ops declared (ops/work.py: flops, bytes read
+ written) over the time of the events that declared it, as GFLOP/s and GB/s, and those as a
share of the device's peaks (profiler/peak.py: its FMA throughput and its memory bandwidth). A
row whose ops declared no work shows "-".
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
    flops: int | None = None     # declared by its events' ops (ops/work.py); None: none declared
    bytes: int | None = None     # read + written, likewise
    work_time: float = 0.0       # seconds (as `share` counts them) of the events that declared work

    @property
    def mean_gpu_time(self) -> float | None:
        return None if self.gpu_time is None else self.gpu_time / self.calls

    @property
    def mean_cpu_time(self) -> float:
        return self.cpu_time / self.calls

    @property
    def gflops(self) -> float | None:
        """Achieved GFLOP/s over the events that declared their work."""
        if self.flops is None or self.work_time <= 0:
            return None
        return self.flops / self.work_time / 1e9

    @property
    def gbps(self) -> float | None:
        """Achieved GB/s (read + written) over the same events."""
        if self.bytes is None or self.work_time <= 0:
            return None
        return self.bytes / self.work_time / 1e9

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity: flops per byte moved (the roofline's x)."""
        return None if not self.flops or not self.bytes else self.flops / self.bytes

    def of_peak(self, peak) -> tuple[float | None, float | None]:
        """(share of the FMA peak, share of the memory bandwidth) a DevicePeak allows."""
        return (None if self.gflops is None else self.gflops / peak.gflops,
                None if self.gbps is None else self.gbps / peak.gbps)


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
        declared = [e for e in events if e.flops is not None]
        found.append(Row(name, len(events), gpu, sum(e.cpu_time for e in events),
                         sum(profile.time_of(e) for e in events) / whole,
                         sum(e.flops for e in declared) if declared else None,
                         sum(e.bytes for e in declared) if declared else None,
                         sum(profile.time_of(e) for e in declared)))
    if sort_by == "name":
        return sorted(found, key=lambda r: r.name)
    if sort_by == "gpu_time" and not profile.gpu_timing:
        sort_by = "cpu_time"
    return sorted(found, key=lambda r: (-getattr(r, sort_by), r.name))


def format_table(profile, sort_by: str = "gpu_time", limit: int | None = None,
                 peak=None) -> str:
    """The header (counts, times, memory, the device's peaks), then the layers and the kernels
    (`limit`: the first rows of each only). `peak`: the DevicePeak the rates are shares of."""
    lines = header(profile)
    if peak is not None:
        lines.append(f"device peak: {peak} (%FMA and %BW below are shares of these medians)")
    for by in ("layer", "kernel"):
        table_rows = rows(profile, by, sort_by)
        shown = table_rows if limit is None else table_rows[:limit]
        lines += ["", f"By {by} (sorted by {sort_by}{'' if profile.gpu_timing else ', CPU times'}"
                      f"; {len(table_rows)} {by}s"
                      + (f", first {len(shown)} shown" if len(shown) < len(table_rows) else "")
                      + "):"]
        lines += _format_rows(shown, by, profile.gpu_timing, peak)
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


RATE_COLUMNS = ("GFLOP/s", "GB/s")
PEAK_COLUMNS = ("%FMA", "%BW")


def _format_rows(table_rows: list[Row], by: str, gpu_timing: bool, peak=None) -> list[str]:
    # The name last: a kernel's name (its shader and defines) is long, and whole.
    columns = ["calls"] + (["GPU total", "GPU mean"] if gpu_timing else []) + \
        ["CPU total", "CPU mean", "share"]
    rates = RATE_COLUMNS + (PEAK_COLUMNS if peak is not None else ())
    lines = ["".join(f"{c:>12}" for c in columns) + "".join(f"{c:>9}" for c in rates) + f"  {by}"]
    for row in table_rows:
        cells = [str(row.calls)]
        if gpu_timing:
            cells += [_ms(row.gpu_time), _ms(row.mean_gpu_time)]
        cells += [_ms(row.cpu_time), _ms(row.mean_cpu_time), f"{row.share:.1%}"]
        rate_cells = [_rate(row.gflops), _rate(row.gbps)]
        if peak is not None:
            rate_cells += [_percent(share) for share in row.of_peak(peak)]
        lines.append("".join(f"{c:>12}" for c in cells) + "".join(f"{c:>9}" for c in rate_cells)
                     + f"  {row.name}")
    return lines


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if 1 <= value < 1e4 else f"{value:.3g}"


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.1%}"


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3f} ms" if seconds < 10 else f"{seconds:.2f} s"


def _mb(n: int) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


__all__ = ["NO_LAYER", "PEAK_COLUMNS", "RATE_COLUMNS", "Row", "SORT_KEYS", "format_table",
           "header", "rows"]
