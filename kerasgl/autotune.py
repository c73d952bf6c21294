"""A short measurement of the kernel variants on this device, saved in the per-device tuning cache
(kerasgl/runtime/tuning.py), for GPUs whose renderer kerasgl has no measured defaults for.

`measure_and_save()` (or `kerasgl tune` from the shell) times each choice tuning.py offers on a
few small representative ops, one choice at a time with the others as they are, keeps the faster
side where it wins by a clear margin (noise on a shared machine must not flip a choice), and writes
the result for this renderer and GL version. Every variant computes the same values (the tests run
them all), so a choice only changes speed. Each variant is compiled once before it is timed; the
first run on a device costs the compiles (seconds on llvmpipe, which JIT-compiles each program).
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, fields

import numpy as np

from .runtime import context, tuning
from .tensors import ownership
from .ops import conv, elementwise, matmul, pool
from .tensors.tensor import tensor

MARGIN = 0.9       # a variant must take under 90% of the current choice's time to replace it


@dataclass(frozen=True)
class Trial:
    """One tuning field, the values to try, and the op whose speed decides it."""
    field: str
    values: tuple
    workload: str


TRIALS = (
    Trial("conv_weights_image", (False, True), "conv"),
    Trial("conv_input_image", (False, True), "conv"),
    Trial("conv_pix", (8, 16), "conv"),
    Trial("conv_local_size", (8, 16, 64), "conv"),
    Trial("matmul_views", (False, True), "matmul"),
    Trial("matmul_as_conv", (False, True), "gemm"),
    Trial("depthwise_views", (False, True), "depthwise"),
    Trial("window_views", (False, True), "pool"),
    Trial("elementwise_views", (False, True), "add"),
)


def _workloads(scale: int):
    """(name -> a function running that op once, returning its result; a function releasing the
    inputs made here). Inputs are kept out of any tidy scope: they outlive the calls."""
    rng = np.random.default_rng(0)

    def upload(array):
        return ownership.keep(tensor(np.asarray(array, np.float32)))

    side = 8 * scale
    x = upload(rng.standard_normal((1, side, side, 64)))
    kernel = conv.pack_conv(rng.standard_normal((3, 3, 64, 64)) * 0.1, None, 1, upload)
    depthwise = conv.pack_depthwise(rng.standard_normal((3, 3, 64, 1)), None, upload)
    a, b = upload(rng.standard_normal((32 * scale, 256))), upload(rng.standard_normal((256, 256)))
    big_a = upload(rng.standard_normal((64 * scale, 512)))
    big_b = upload(rng.standard_normal((512, 512)))
    work = {
        "conv": lambda: conv.conv2d(x, kernel, padding=((1, 1), (1, 1))),
        "matmul": lambda: matmul.matmul(a, b),
        "gemm": lambda: matmul.matmul(big_a, big_b),
        "depthwise": lambda: conv.depthwise_conv2d(x, depthwise, padding=((1, 1), (1, 1))),
        "pool": lambda: pool.pool2d(x, "max", (2, 2), (2, 2)),
        "add": lambda: elementwise.add(x, x),
    }

    def release():
        ownership.dispose([x, a, b, big_a, big_b])
        kernel.dispose()
        depthwise.dispose()
    return work, release


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


def _setting_text(values: dict) -> str:
    return ",".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in values.items())


def measure(scale: int = 4, repeats: int = 5, report=None) -> dict:
    """Time every trial and return the chosen settings (field -> value). `report(line)` gets a
    line per trial. Runs under the KERASGL_TUNING variable, restored afterwards."""
    chosen = {f.name: getattr(tuning.current(), f.name) for f in fields(tuning.Tuning)}
    previous = os.environ.get(tuning.ENV)
    work, release = _workloads(scale)
    try:
        for trial in TRIALS:
            seconds = {}
            for value in trial.values:
                os.environ[tuning.ENV] = _setting_text({**chosen, trial.field: value})
                seconds[value] = _time(work[trial.workload], repeats)
            best = min(seconds, key=seconds.get)
            if best != chosen[trial.field] and seconds[best] < MARGIN * seconds[chosen[trial.field]]:
                chosen[trial.field] = best
            if report is not None:
                timings = ", ".join(f"{v}: {s * 1e3:.2f} ms" for v, s in seconds.items())
                report(f"{trial.field:20s} {timings}  -> {chosen[trial.field]}")
    finally:
        release()
        if previous is None:
            os.environ.pop(tuning.ENV, None)
        else:
            os.environ[tuning.ENV] = previous
    return chosen


def measure_and_save(scale: int = 4, repeats: int = 5, report=None) -> dict:
    """measure(), then save the choices for this device (tuning.save; a cache that cannot be
    written is reported, not raised). Returns the choices."""
    chosen = measure(scale, repeats, report)
    saved = tuning.save(chosen)
    if report is not None:
        report(f"{'saved to' if saved else 'could not write'} {tuning.cache_path()} "
               f"for '{tuning.device_key()}'")
    return chosen
