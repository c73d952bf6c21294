"""What this device can do at best: its float32 FMA throughput and its memory bandwidth, measured
by kerasgl's own microbenchmark shaders, so that a kernel's achieved rate can be read as a share
of them (the profile's table and roofline: table.py, plot.py).

    kg.device_peak()      # DevicePeak(gflops=..., gbps=..., ...), measured once per device

- FMA throughput (shaders/peak_fma.comp): every invocation runs independent chains of
  fma(x, a, b); enough chains to hide the FMA latency, enough work groups of LOCAL_SIZE to fill
  every core. How many chains fill a device's pipelines and still fit its registers differs (a
  GPU thread has dozens of registers; a CPU core running llvmpipe holds a vec4 of 8 lanes in four
  of its 16 or 32 vector registers), so each of FMA_SHAPES is timed and the fastest is the peak.
- Memory bandwidth (shaders/peak_copy.comp): a streaming vec4 copy between two buffers far
  larger than any cache, read + written bytes; also as a read-mostly stream (4 vec4s read per
  vec4 written: where stores are slower than loads, as on llvmpipe, a plain copy understates
  what a kernel that mostly reads reaches), and with the source read both ways kernels read
  their operands (a storage buffer, or an image view of it: runtime/buffer_views.py). The
  fastest of these COPY_SHAPES is the peak.

Each figure is the median of RUNS timed runs (each at least RUN_SECONDS long, so that the fixed
cost of a dispatch is noise), with its spread, (slowest - fastest) / median, and the fastest run
(`*_best`: on a shared machine other processes only ever slow a run down, so the fastest is the
one least disturbed). The result is cached per device, under the key the kernel tuning uses
(runtime/tuning.device_key: renderer, GL version and driver threads), in
~/.cache/kerasgl/device_peak.json (cache_files.py): measured on first use, or again by
`kerasgl tune`, and printed by `kerasgl info`.
"""
from __future__ import annotations

import datetime
import statistics
import time
from dataclasses import asdict, dataclass

from .. import cache_files
from ..ops import dispatch
from ..runtime import buffer_views, context, tuning
from ..tensors import ownership
from ..tensors.tensor import empty

CACHE_FILE = "device_peak.json"
RUNS = 7
RUN_SECONDS = 0.03        # every timed run at least this long (a dispatch costs up to ~50 us)
MAX_SCALE = 1 << 20       # the most FMA loop iterations / copies one timed run may take
LOCAL_SIZE = 256
FMA_GROUPS = 2048         # x 256 invocations: several waves of any GPU's resident threads
UNROLL = 8                # fma steps per chain per loop iteration (peak_fma.comp)
# (chains, floats per chain): the shapes timed for the peak; the fastest wins.
FMA_SHAPES = ((2, 4), (4, 4), (8, 4))
NAIVE_SHAPE = (1, 1)      # one scalar chain: bound by the FMA latency, not its throughput
COPY_MAX_BYTES = 256 << 20
# (vec4s read per vec4 written, source read through an image view): the copies timed.
COPY_SHAPES = ((1, False), (1, True), (4, False), (4, True))


@dataclass(frozen=True)
class DevicePeak:
    """A device's measured peaks: `gflops` (float32, 2 operations per FMA) and `gbps` (bytes read +
    written per second, 1e9), the medians of `runs` runs; `*_spread` is (slowest - fastest) /
    median of those runs, `*_best` the fastest of them. `device` is the tuning cache's key of the
    device measured."""
    gflops: float
    gbps: float
    gflops_spread: float
    gbps_spread: float
    gflops_best: float
    gbps_best: float
    runs: int
    device: str
    fma_shape: tuple = ()     # (chains, floats per chain) of the fastest FMA shader
    copy_shape: tuple = ()    # (vec4s read per vec4 written, read through an image view) of the
                              # fastest copy
    measured_at: str = ""     # UTC, ISO 8601

    def __str__(self) -> str:
        return (f"float32 FMA {self.gflops:.1f} GFLOP/s (best {self.gflops_best:.1f}, spread "
                f"{self.gflops_spread:.0%}), memory {self.gbps:.1f} GB/s (best "
                f"{self.gbps_best:.1f}, spread {self.gbps_spread:.0%}); median of {self.runs} runs")

    @classmethod
    def from_dict(cls, data: dict) -> "DevicePeak | None":
        """The peak a cache entry holds, or None for one this version cannot read."""
        try:
            peak = cls(float(data["gflops"]), float(data["gbps"]), float(data["gflops_spread"]),
                       float(data["gbps_spread"]), float(data["gflops_best"]),
                       float(data["gbps_best"]), int(data["runs"]), str(data["device"]),
                       tuple(data.get("fma_shape", ())), tuple(data.get("copy_shape", ())),
                       str(data.get("measured_at", "")))
        except (KeyError, TypeError, ValueError):
            return None
        return peak if peak.gflops > 0 and peak.gbps > 0 else None


def _seconds(run) -> float:
    """Wall seconds of run(), the GPU idle before and finished after (glFinish both sides)."""
    ctx = context.get_context()
    ctx.finish()
    start = time.perf_counter()
    run()
    ctx.finish()
    return time.perf_counter() - start


def _timed_rates(run_with, amount, first: int, runs: int) -> list[float]:
    """Rates (units per second) of `runs` timed runs of run_with(n), after sizing n from `first`
    up (doubling, then scaled) until one run takes RUN_SECONDS (or n reaches MAX_SCALE: a
    clock that never moves must not loop forever); amount(n) is the work of one run. The first
    run compiles the program and touches the memory; no sizing run is one of the timed ones."""
    n = first
    run_with(n)
    while n < MAX_SCALE:
        seconds = _seconds(lambda: run_with(n))
        if seconds >= RUN_SECONDS:
            break
        n = n * 2 if seconds <= 0 else max(n * 2, int(n * 1.2 * RUN_SECONDS / seconds))
    n = min(n, MAX_SCALE)
    return [amount(n) / _seconds(lambda: run_with(n)) for _ in range(runs)]


def fma_rates(chains: int, width: int, runs: int = RUNS) -> list[float]:
    """FLOP/s of `runs` runs of the FMA shader with `chains` independent chains of `width`
    floats (4: vec4) per invocation."""
    invocations = FMA_GROUPS * LOCAL_SIZE
    defines = {"LOCAL_SIZE": LOCAL_SIZE, "CHAINS": chains, "WIDTH": width, "UNROLL": UNROLL}
    groups = dispatch.groups_for(invocations, LOCAL_SIZE)

    def rates() -> list[float]:
        out = empty((invocations,))

        def run_with(iterations: int) -> None:
            dispatch.run("peak_fma.comp", defines=defines, buffers=[out], groups=groups,
                         uniforms={"iterations": iterations, "a": 0.999, "b": 0.001,
                                   "n_invocations": invocations})
        return _timed_rates(run_with, lambda n: 2.0 * invocations * n * UNROLL * chains * width,
                            1, runs)
    return ownership.tidy.run(rates)


def copy_bytes() -> int:
    """The bytes of the copy's source: COPY_MAX_BYTES, or half the largest storage block."""
    return min(COPY_MAX_BYTES, context.limits().max_ssbo_block_bytes // 2) // 64 * 64


def copy_rates(runs: int = RUNS, reads: int = 1, view: bool = False) -> list[float]:
    """Bytes/s (read + written) of `runs` runs of the streaming copy: `reads` vec4s read per
    vec4 written, the source read through an image view or not."""
    nbytes = copy_bytes()
    n_vec4 = nbytes // 16 // reads
    groups = dispatch.groups_for(n_vec4, LOCAL_SIZE)
    defines = {"LOCAL_SIZE": LOCAL_SIZE, "SRC_VIEW": view, "READS": reads}

    def rates() -> list[float]:
        src = empty((nbytes // 4,))
        dst = empty((nbytes // 4 // reads,))

        def run_with(copies: int) -> None:
            for _ in range(copies):
                dispatch.run("peak_copy.comp", defines=defines, buffers=[src, dst],
                             views=[(0, src)] if view else [], groups=groups,
                             uniforms={"n_vec4": n_vec4})
        return _timed_rates(run_with, lambda n: (nbytes + nbytes // reads) * n, 1, runs)
    return ownership.tidy.run(rates)


def spread(rates: list[float]) -> float:
    return (max(rates) - min(rates)) / statistics.median(rates)


def measure(runs: int = RUNS) -> DevicePeak:
    """Measure both peaks now (a few seconds on llvmpipe; nothing cached)."""
    best_shape, best = None, None
    for chains, width in FMA_SHAPES:          # a few quick runs each pick the shape
        rate = max(fma_rates(chains, width, runs=3))
        if best is None or rate > best:
            best_shape, best = (chains, width), rate
    flops = fma_rates(*best_shape, runs=runs)
    shapes = [s for s in COPY_SHAPES if not s[1] or buffer_views.fits(copy_bytes())]
    copy_shape = max(shapes, key=lambda s: max(copy_rates(3, *s)))
    moved = copy_rates(runs, *copy_shape)
    return DevicePeak(statistics.median(flops) / 1e9, statistics.median(moved) / 1e9,
                      spread(flops), spread(moved), max(flops) / 1e9, max(moved) / 1e9, runs,
                      tuning.device_key(), best_shape, copy_shape,
                      datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))


def cached() -> DevicePeak | None:
    """This device's peak from the cache file, or None where it was never measured."""
    entry = cache_files.read_dict(CACHE_FILE).get(tuning.device_key())
    return DevicePeak.from_dict(entry) if isinstance(entry, dict) else None


def save(peak: DevicePeak) -> bool:
    """Record `peak` for its device; False (nothing raised) where the file cannot be written."""
    data = cache_files.read_dict(CACHE_FILE)
    data[peak.device] = asdict(peak)
    return cache_files.write_dict(CACHE_FILE, data)


def device_peak(refresh: bool = False) -> DevicePeak:
    """This device's float32 FMA throughput and memory bandwidth (a DevicePeak): from the cache
    when it was measured before on this renderer and driver, else measured now (a few seconds)
    and cached; `refresh=True` measures again. See kerasgl/profiler/peak.py for how."""
    peak = None if refresh else cached()
    if peak is None:
        peak = measure()
        save(peak)
    return peak


__all__ = ["CACHE_FILE", "DevicePeak", "cached", "copy_rates", "device_peak", "fma_rates",
           "measure", "save"]
