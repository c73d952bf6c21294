"""The GPU profiler: what each dispatch of a predict cost, on the GPU and the CPU, and the memory.

    with kg.profile() as p:
        model.predict(x)
    print(p.table(sort_by="gpu_time"))     # per layer and per kernel: calls, total, mean, share
    p.export_chrome_trace("trace.json")    # open in ui.perfetto.dev (or chrome://tracing)
    p.plot("profile.png")                  # time per layer and the memory timeline (matplotlib)

Every dispatch made inside the block is an Event (recorder.py): its layer, kernel (shader file
and defines), shapes and work groups, CPU time, GPU time from GL timer queries
(timer_queries.py), the GL bytes allocated and freed, and the bytes live after it. Eager calls
and execution-plan replays are both recorded, a replay step by step. Outside a profile nothing
of this runs and no query object exists. docs/profiling.md has a real profile and the how-to.
"""
from __future__ import annotations

from . import chrome_trace, plot as _plot, table as _table
from .recorder import Event, Profile as _Recording, kernel_name
from .table import Row


class Profile(_Recording):
    """The events of one `with kg.profile() as p:` block, and what can be made of them."""

    def table(self, sort_by: str = "gpu_time", limit: int | None = None) -> str:
        """Per layer and per kernel: calls, total and mean time, share of the whole, sorted by
        "gpu_time" (CPU time without GPU timestamps), "cpu_time", "calls" or "name"."""
        return _table.format_table(self, sort_by, limit)

    def rows(self, by: str = "layer", sort_by: str = "gpu_time") -> list[Row]:
        """table()'s rows as data: by "layer" or "kernel"."""
        return _table.rows(self, by, sort_by)

    def export_chrome_trace(self, path) -> str:
        """Write a Chrome/Perfetto trace (JSON): CPU, GPU and layer tracks, a memory counter."""
        return chrome_trace.export(self, path)

    def plot(self, path, top: int = _plot.TOP_LAYERS, title: str | None = None) -> str:
        """Draw the time per layer and the memory timeline into an image (needs matplotlib)."""
        return _plot.plot(self, path, top=top, title=title)


def profile(gpu_timing: bool = True) -> Profile:
    """A profile to use as `with kg.profile() as p:` (on the thread kerasgl's GL context runs
    on). gpu_timing=False records CPU times only and makes no GL query objects."""
    return Profile(gpu_timing)


__all__ = ["Event", "Profile", "Row", "kernel_name", "profile"]
