"""A profile as a picture: the time per layer (the slowest first) above the GL memory timeline.

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


def plot(profile, path, top: int = TOP_LAYERS, title: str | None = None, dpi: int = 80) -> str:
    """Draw `profile` into `path`: a bar per layer (the `top` slowest; the title sums the rest)
    and the bytes kerasgl holds on the GPU over the profile's time. Returns the path."""
    layers = rows(profile, "layer", "gpu_time")
    shown, rest = layers[:top], layers[top:]
    names = [r.name for r in shown]
    timed = "GPU" if profile.gpu_timing else "CPU"
    values = [_ms(r, profile) for r in shown]
    total = sum(_ms(r, profile) for r in layers)
    others = (f"; {len(rest)} other layers {sum(_ms(r, profile) for r in rest):.1f} ms"
              if rest else "")
    figure = _figure(figsize=(8, 3 + 0.22 * len(names)))
    bars, memory = figure.subplots(
        2, 1, gridspec_kw={"height_ratios": [max(2, 0.22 * len(names)), 2]})
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
    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    return str(path)


def _ms(row, profile) -> float:
    seconds = row.gpu_time if profile.gpu_timing else row.cpu_time
    return (seconds or 0.0) * 1e3


__all__ = ["plot"]
