"""The GPU profiler: what each dispatch of a predict cost, on the GPU and the CPU, and the memory.

    with kg.profile() as p:
        model.predict(x)
    print(p.table(sort_by="gpu_time"))     # per layer and per kernel: calls, total, mean, share
    p.export_chrome_trace("trace.json")    # open in ui.perfetto.dev (or chrome://tracing)
    p.plot("profile.png")                  # time per layer and the memory timeline (matplotlib)

Every dispatch made inside the block is an Event (recorder.py): its layer, kernel (shader file
and defines), shapes and work groups, CPU time, GPU time from GL timer queries
(timer_queries.py), the GL bytes allocated and freed, and the bytes live after it; its work group
size and invocations, and the work its op declared (flops, bytes: ops/work.py), which the table
and the plot read against the device's peaks (peak.py: kg.device_peak()). Eager calls
and execution-plan replays are both recorded, a replay step by step. Outside a profile nothing
of this runs and no query object exists. docs/profiling.md has a real profile and the how-to.
"""
from __future__ import annotations

from . import chrome_trace, plot as _plot, table as _table
from .peak import DevicePeak, device_peak
from .recorder import Event, Profile as _Recording, kernel_name
from .table import Row


class Profile(_Recording):
    """The events of one `with kg.profile() as p:` block, and what can be made of them."""

    def table(self, sort_by: str = "gpu_time", limit: int | None = None,
              peak: "DevicePeak | bool" = True) -> str:
        """Per layer and per kernel: calls, total and mean time, share of the whole, sorted by
        "gpu_time" (CPU time without GPU timestamps), "cpu_time", "calls" or "name"; then the
        achieved GFLOP/s and GB/s of the ops' declared work and their share of the device's peaks
        (`peak`: True for kg.device_peak(), measured on its first use on this device and cached;
        a DevicePeak; False for no share columns)."""
        return _table.format_table(self, sort_by, limit, _peak(peak))

    def rows(self, by: str = "layer", sort_by: str = "gpu_time") -> list[Row]:
        """table()'s rows as data: by "layer" or "kernel"."""
        return _table.rows(self, by, sort_by)

    def export_chrome_trace(self, path) -> str:
        """Write a Chrome/Perfetto trace (JSON): CPU, GPU and layer tracks, a memory counter."""
        return chrome_trace.export(self, path)

    def plot(self, path, top: int = _plot.TOP_LAYERS, title: str | None = None,
             peak: "DevicePeak | bool" = True) -> str:
        """Draw the time per layer, the memory timeline and a roofline of the kernels (their
        arithmetic intensity against their achieved GFLOP/s, under the device's two ceilings:
        `peak` as for table(); False: no ceilings) into an image (needs matplotlib)."""
        return _plot.plot(self, path, top=top, title=title, peak=_peak(peak))


def _peak(peak):
    """table()'s and plot()'s `peak` argument as a DevicePeak or None."""
    if peak is True:
        return device_peak()
    return peak or None


def profile(gpu_timing: bool = True) -> Profile:
    """A profile to use as `with kg.profile() as p:` (on the thread kerasgl's GL context runs
    on). gpu_timing=False records CPU times only and makes no GL query objects."""
    return Profile(gpu_timing)


__all__ = ["DevicePeak", "Event", "Profile", "Row", "device_peak", "kernel_name", "profile"]
