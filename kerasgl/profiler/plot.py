"""A profile as a picture: the time per layer (the slowest first), the GL memory timeline, and a
roofline of the kernels: each kernel's arithmetic intensity (declared flops per byte read +
written: ops/work.py) against its achieved GFLOP/s, under the device's two ceilings (profiler/
peak.py): the FMA peak, and the memory bandwidth times the intensity. A point near a ceiling
uses the device well; far below both, it is bound by something else (latency, dispatch cost).

Needs matplotlib, an optional extra (pip install 'kerasgl[plots]'). It draws on a Figure of its
own, off screen, without pyplot (no global backend or figure state is touched), into a PNG or any
format matplotlib writes, chosen by the file's suffix.
"""
from __future__ import annotations

from .table import rows

TOP_LAYERS = 20


def _figure(**kwargs):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("Profile.plot needs matplotlib: pip install 'kerasgl[plots]' "
                          "(or pip install matplotlib).") from exc
    return Figure(**kwargs)


def plot(profile, path, top: int = TOP_LAYERS, title: str | None = None, dpi: int = 80,
         peak=None) -> str:
    """Draw `profile` into `path`: a bar per layer (the `top` slowest; the title sums the rest),
    the bytes kerasgl holds on the GPU over the profile's time, and the kernels' roofline under
    `peak`'s ceilings (a DevicePeak; None: the points only). Returns the path."""
    layers = rows(profile, "layer", "gpu_time")
    shown, rest = layers[:top], layers[top:]
    names = [r.name for r in shown]
    timed = "GPU" if profile.gpu_timing else "CPU"
    values = [_ms(r, profile) for r in shown]
    total = sum(_ms(r, profile) for r in layers)
    others = (f"; {len(rest)} other layers {sum(_ms(r, profile) for r in rest):.1f} ms"
              if rest else "")
    figure = _figure(figsize=(8, 7 + 0.22 * len(names)))
    bars, memory, roof = figure.subplots(
        3, 1, gridspec_kw={"height_ratios": [max(2, 0.22 * len(names)), 2, 4]})
    positions = list(range(len(names)))[::-1]
    bars.barh(positions, values, color="#4c72b0")
    bars.set_yticks(positions)
    bars.set_yticklabels(names, fontsize=7)
    bars.set_xlabel(f"{timed} time (ms), all calls")
    bars.set_title((f"{title}\n" if title else "") + f"{len(profile.events)} GPU actions, "
                   f"{timed} {total:.1f} ms{others}", fontsize=9)
    times = [0.0] + [(e.cpu_start + e.cpu_time) * 1e3 for e in profile.events] + \
        [profile.wall_time * 1e3]
    live = [profile.bytes_at_start] + [e.live_bytes for e in profile.events] + \
        [profile.bytes_at_end]
    memory.step(times, [b / 2**20 for b in live], where="post", color="#dd8452")
    memory.set_xlabel("time since the profile's start (ms)")
    memory.set_ylabel("GL memory (MB)")
    memory.set_ylim(bottom=0)
    roofline(roof, rows(profile, "kernel", "gpu_time"), peak)
    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    return str(path)


LABELLED = 6     # kernels named on the roofline: the slowest ones


def roofline(axes, kernel_rows, peak) -> None:
    """Each kernel that declared work as a point (area: its share of the time), the slowest
    named by their shader file; the ceilings min(FMA peak, intensity x bandwidth) drawn."""
    points = [r for r in kernel_rows if r.intensity and r.gflops]
    xs = [r.intensity for r in points]
    if peak is not None:
        ridge = peak.gflops / peak.gbps
        xs_all = xs + [ridge]
        low, high = min(xs_all) / 4, max(xs_all) * 4
        line = [low, ridge, high]
        axes.plot(line, [min(peak.gflops, x * peak.gbps) for x in line], color="#c44e52",
                  label=f"device peak: {peak.gflops:.0f} GFLOP/s, {peak.gbps:.0f} GB/s")
        axes.legend(fontsize=7, loc="lower right")
    if points:
        axes.scatter(xs, [r.gflops for r in points], s=[20 + 400 * r.share for r in points],
                     color="#4c72b0", alpha=0.6)
        for row in points[:LABELLED]:
            axes.annotate(row.name.split(" ")[0], (row.intensity, row.gflops), fontsize=6)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("arithmetic intensity (flops per byte read + written)")
    axes.set_ylabel("achieved GFLOP/s")
    axes.set_title("roofline: kernels under the device's ceilings", fontsize=9)


def _ms(row, profile) -> float:
    seconds = row.gpu_time if profile.gpu_timing else row.cpu_time
    return (seconds or 0.0) * 1e3


__all__ = ["plot", "roofline"]
