#!/usr/bin/env python
"""The figures of one GPU machine in one JSON file (run by scripts/gpu_check.sh, which prepares
the machine and runs the tests first): the device, its peaks (kerasgl/profiler/peak.py), the
kernel variants `kerasgl tune` picks there, the GEMM and convolution micro-benchmarks as shares
of the FMA peak, and a profile of each model given: batch-1 latency, and per kernel its calls,
time, achieved GFLOP/s and GB/s and % of the device's peaks, with the share of the model's
invocations in work groups of 64 or more.

    python scripts/gpu_check.py --out gpu_check.json [--tests-log tests.log] [--model m.keras ...]

Needs no Keras: models are given as saved files (gpu_check.sh builds them with Keras when the
machine has it). The micro-benchmarks are scripts/bench.py's (numpy next to them; no XLA).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (puts the repository first on sys.path)

import numpy as np  # noqa: E402

import kerasgl as kg  # noqa: E402
from kerasgl import autotune  # noqa: E402
from kerasgl.profiler import command, peak  # noqa: E402
from kerasgl.runtime import context  # noqa: E402

PROFILED_RUNS = 3
LATENCY_RUNS = 20


def tests_summary(path: str | None) -> dict | None:
    """The last line of a pytest log (its counts), and the failures it names."""
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as handle:
        lines = [line.rstrip() for line in handle if line.strip()]
    return {"summary": lines[-1] if lines else "", "failed": [
        line for line in lines if line.startswith(("FAILED", "ERROR"))]}


# How each model is profiled: as the file has it, and stored as halves throughout (weights and
# activations: docs/float16.md), where the halved traffic shows on a GPU.
DTYPES = (("float32", "float32"), ("float16", "float16"))


def profile_model(path: str, found_peak, storage_dtype: str = "float32",
                  activation_dtype: str = "float32") -> dict:
    """Batch-1 latency and a profile of `path`'s replayed predict, per kernel against the peak."""
    with kg.load_model(path, storage_dtype=storage_dtype,
                       activation_dtype=activation_dtype) as model:
        x = command.random_inputs(model, 1)
        x = x if len(x) > 1 else x[0]
        start = time.perf_counter()
        model.predict(x, verbose=0)
        first = time.perf_counter() - start
        command.warm_up(model, x, None)
        ctx = context.get_context()
        times = []
        for _ in range(LATENCY_RUNS):
            start = time.perf_counter()
            model.predict(x, verbose=0)
            ctx.finish()
            times.append(time.perf_counter() - start)
        with kg.profile() as p:
            for _ in range(PROFILED_RUNS):
                model.predict(x, verbose=0)
    events = [e for e in p.events if e.invocations]
    invocations = sum(e.invocations for e in events)
    kernels = []
    for row in p.rows("kernel"):
        fma, bandwidth = row.of_peak(found_peak)
        kernels.append({"kernel": row.name, "calls": row.calls // PROFILED_RUNS,
                        "ms": (row.gpu_time if row.gpu_time is not None else row.cpu_time)
                        / PROFILED_RUNS * 1e3, "share": row.share, "gflops": row.gflops,
                        "gbps": row.gbps, "fraction_of_fma_peak": fma,
                        "fraction_of_bandwidth": bandwidth})
    return {"model": os.path.basename(path), "storage_dtype": storage_dtype,
            "activation_dtype": activation_dtype, "first_predict_s": first,
            "batch1_ms": float(np.median(times)) * 1e3, "batch1_best_ms": min(times) * 1e3,
            "gpu_ms_per_predict": (p.gpu_time or 0) / PROFILED_RUNS * 1e3,
            "invocations": invocations,
            "share_in_groups_of_64": sum(e.invocations for e in events
                                         if e.group_invocations >= 64) / max(1, invocations),
            "kernels": kernels, "table": p.table(peak=found_peak)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--tests-log", help="pytest's output, summarised into the JSON")
    parser.add_argument("--model", action="append", default=[], help="a .keras file to profile")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    info = kg.info()
    result = {"info": dataclasses.asdict(info), "tests": tests_summary(args.tests_log)}

    def save():
        result["total_s"] = time.perf_counter() - started
        with open(args.out, "w") as handle:
            json.dump(result, handle, indent=1, default=str)

    lines = []
    result["tune"] = {"choices": autotune.measure_and_save(report=lines.append), "report": lines}
    save()
    found = peak.device_peak(refresh=True)
    result["device_peak"] = dataclasses.asdict(found)
    print(f"device peak: {found}", flush=True)
    save()
    gemm = bench.bench_gemm(False, 7, 8.0)
    conv = bench.bench_conv(False, 7, 8.0, with_xla=False)
    bench.of_peak(gemm + conv, result["device_peak"])
    result["micro"] = {"gemm": gemm, "conv": conv, "dispatch": bench.bench_dispatch(False)}
    for row in gemm + conv:
        print(f"{row['name']}: {row['kerasgl_gflops']:.1f} GFLOP/s, "
              f"{row['fraction_of_peak']:.0%} of the FMA peak", flush=True)
    save()
    result["models"] = []
    for path in args.model:
        for storage_dtype, activation_dtype in DTYPES:
            try:
                found_model = profile_model(path, found, storage_dtype, activation_dtype)
            except Exception as exc:     # one model's failure must not lose the others' figures
                found_model = {"model": path, "storage_dtype": storage_dtype,
                               "activation_dtype": activation_dtype, "error": repr(exc)}
            result["models"].append(found_model)
            print(f"{os.path.basename(path)}, weights {storage_dtype}, activations "
                  f"{activation_dtype}:", found_model.get("batch1_ms"), "ms", flush=True)
            print(found_model.get("table", found_model.get("error")), flush=True)
            save()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
