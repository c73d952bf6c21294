"""A short measurement of the kernel variants on this device, saved in the per-device tuning cache
(kerasgl/runtime/tuning.py), for GPUs whose renderer kerasgl has no measured defaults for.

`measure_and_save()` (or `kerasgl tune` from the shell) times each choice tuning.py offers on a
few small representative ops, one choice at a time with the others as they are, and writes the
result for this renderer and GL version. Each variant is timed in ROUNDS rounds (interleaved with
the others', in alternating order), and a variant replaces the current choice only when it beats
it by MARGIN in every round (`decide`): noise on a shared machine, which slows one round and not
the next, must not flip a choice. Every variant computes the same values (the tests run
them all), so a choice only changes speed. Each variant is compiled once before it is timed; the
first run on a device costs the compiles (seconds on llvmpipe, which JIT-compiles each program).
The tiled GEMM's tile shape is timed on the tiled GEMM whatever else is chosen (a trial's
`forces`), so that its choice means something wherever the tiled kernels run, and the tiled
depthwise kernel's on that kernel, before depthwise_tiled is decided with the shape chosen; a
shape the device cannot run (ops/gemm_tiles.py, ops/conv.py) is left out of its trial.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, fields

import numpy as np

from . import settings
from .errors import SettingError
from .runtime import context, tuning
from .tensors import ownership
from .ops import conv, elementwise, gemm_tiles, matmul, pool
from .tensors.tensor import tensor

MARGIN = 0.9       # a variant must take under 90% of the current choice's time to replace it
ROUNDS = 3         # ... in each of this many rounds of timings


@dataclass(frozen=True)
class Trial:
    """One tuning field, the values to try, and the op whose speed decides it."""
    field: str
    values: tuple
    workload: str
    forces: tuple = ()      # (field, value) pairs in force while this trial is timed


TILED = (("matmul_tiled", True), ("matmul_as_conv", False))     # the tile trials run tiled GEMMs
DW_TILED = (("depthwise_tiled", True),)     # ... and the tiled depthwise kernel


TRIALS = (
    Trial("conv_weights_image", (False, True), "conv"),
    Trial("conv_input_image", (False, True), "conv"),
    Trial("conv_pix", (4, 8, 16), "conv"),
    Trial("conv_local_size", (8, 16, 64), "conv"),
    Trial("matmul_views", (False, True), "matmul"),
    Trial("matmul_as_conv", (False, True), "gemm"),
    Trial("matmul_tiled", (False, True), "gemm"),
    Trial("gemm_tile_m", (32, 64, 128), "gemm", TILED),
    Trial("gemm_tile_n", (32, 64, 128), "gemm", TILED),
    Trial("gemm_block_m", (4, 8), "gemm", TILED),
    Trial("gemm_block_n", (4, 8), "gemm", TILED),
    Trial("gemm_tile_k", (8, 16, 32), "gemm", TILED),
    Trial("conv_gemm", (False, True), "conv"),
    Trial("depthwise_views", (False, True), "depthwise"),
    Trial("depthwise_tile_c", (2, 4, 8), "depthwise", DW_TILED),
    Trial("depthwise_tile_pix", (1, 2, 4), "depthwise", DW_TILED),
    Trial("depthwise_tiled", (False, True), "depthwise"),
    Trial("window_views", (False, True), "pool"),
    Trial("elementwise_views", (False, True), "add"),
)


def _workloads(scale: int) -> dict:
    """name -> a function running that op once, returning its result. The inputs made here
    belong to the caller's tidy scope, which frees them."""
    rng = np.random.default_rng(0)

    def upload(array):
        return tensor(np.asarray(array, np.float32))

    side = 8 * scale
    x = upload(rng.standard_normal((1, side, side, 64)))
    # The weights in both layouts (packed per block; a matrix, for the implicit GEMM: tuning
    # conv_gemm), the trial's tuning picking which the convolution reads.
    weights = rng.standard_normal((3, 3, 64, 64)) * 0.1
    kernels = {}
    for layout in (False, True):
        with settings.override(tuning=f"conv_gemm={int(layout)}"):
            kernels[layout] = conv.pack_conv(weights, None, 1, upload)
    depthwise = conv.pack_depthwise(rng.standard_normal((3, 3, 64, 1)), None, upload)
    a, b = upload(rng.standard_normal((32 * scale, 256))), upload(rng.standard_normal((256, 256)))
    big_a = upload(rng.standard_normal((64 * scale, 512)))
    big_b = upload(rng.standard_normal((512, 512)))
    work = {
        "conv": lambda: conv.conv2d(x, kernels[tuning.current().conv_gemm],
                                    padding=((1, 1), (1, 1))),
        "matmul": lambda: matmul.matmul(a, b),
        "gemm": lambda: matmul.matmul(big_a, big_b),
        "depthwise": lambda: conv.depthwise_conv2d(x, depthwise, padding=((1, 1), (1, 1))),
        "pool": lambda: pool.pool2d(x, "max", (2, 2), (2, 2)),
        "add": lambda: elementwise.add(x, x),
    }
    return work


def _time(run, repeats: int) -> float:
    """Median seconds of one run, after one untimed run (which compiles the variant)."""
    ctx = context.get_context()
    run().dispose()
    ctx.finish()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run().dispose()
        ctx.finish()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _runs_here(values: dict) -> bool:
    """Whether the tiled GEMM's tile shape in `values` fits this device (ops/gemm_tiles.py), and
    the tiled depthwise kernel's (ops/conv.py tuned_depthwise_tiles)."""
    with settings.override(tuning=_setting_text(values)):
        try:
            gemm_tiles.current()
            conv.tuned_depthwise_tiles()
        except SettingError:
            return False
    return True


def _setting_text(values: dict) -> str:
    return ",".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in values.items())


def decide(current, seconds: dict):
    """The value to keep: the fastest by its median over the rounds, if it took under MARGIN of
    `current`'s time in every round (seconds: value -> one time per round, the rounds in the same
    order for every value); else `current`."""
    best = min(seconds, key=lambda v: statistics.median(seconds[v]))
    if best == current or current not in seconds:
        return current
    if all(mine < MARGIN * theirs for mine, theirs in zip(seconds[best], seconds[current])):
        return best
    return current


def measure(scale: int = 4, repeats: int = 3, report=None, rounds: int = ROUNDS) -> dict:
    """Time every trial and return the chosen settings (field -> value): `rounds` rounds of
    `repeats` timed runs per value, decided by `decide`. `report(line)` gets a line per trial,
    with each value's time per round. Each variant runs under a tuning override (kerasgl/settings.py), never by
    changing os.environ: the process's environment, and so its child processes', stay as they are."""
    chosen = {f.name: getattr(tuning.current(), f.name) for f in fields(tuning.Tuning)}

    def trials() -> None:
        work = _workloads(scale)
        for trial in TRIALS:
            forced = dict(trial.forces)
            values = [v for v in trial.values if v == chosen[trial.field]
                      or _runs_here({**chosen, **forced, trial.field: v})]
            seconds = {value: [] for value in values}           # one median per round
            for round_number in range(rounds):
                order = values if round_number % 2 == 0 else values[::-1]
                for value in order:
                    setting = _setting_text({**chosen, **forced, trial.field: value})
                    with settings.override(tuning=setting):
                        seconds[value].append(_time(work[trial.workload], repeats))
            chosen[trial.field] = decide(chosen[trial.field], seconds)
            if report is not None:
                timings = ", ".join(f"{v}: " + "/".join(f"{t * 1e3:.2f}" for t in s) + " ms"
                                    for v, s in seconds.items())
                report(f"{trial.field:20s} {timings}  -> {chosen[trial.field]}")
    ownership.tidy.run(trials)
    return chosen


def measure_and_save(scale: int = 4, repeats: int = 3, report=None, rounds: int = ROUNDS) -> dict:
    """measure(), then save the choices for this device (tuning.save; a cache that cannot be
    written is reported, not raised). Returns the choices."""
    chosen = measure(scale, repeats, report, rounds)
    saved = tuning.save(chosen)
    if report is not None:
        report(f"{'saved to' if saved else 'could not write'} {tuning.cache_path()} "
               f"for '{tuning.device_key()}'")
    return chosen
