"""Probe matmul block configurations on this device: GFLOP/s of kerasgl.ops.matmul for each
(TM, NV, LX, LY) given, wall-clock and CPU-time based (on a shared llvmpipe machine the CPU time of
the process, llvmpipe's threads included, is steadier than the wall clock), next to numpy.

    python scripts/probe_matmul.py --shapes 1024x1024x1024,3136x64x256 --configs 8,2,16,4 16,8,8,1
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import kerasgl as kg
from kerasgl.runtime import context
from kerasgl.ops import matmul as mm


def timed(fn, repeats: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds / 2 cores) of fn() after one warm-up run."""
    fn().dispose()
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        context.get_context().finish()
        walls.append(time.perf_counter() - t0)
        cpus.append((time.process_time() - c0) / 2)
        out.dispose()
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shapes", default="1024x1024x1024", help="MxKxN,...")
    parser.add_argument("--configs", nargs="*", default=[], help="TM,NV,LX,LY (default: the chosen one)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    original = mm._block_config
    rng = np.random.default_rng(0)
    for shape in args.shapes.split(","):
        m, k, n = (int(v) for v in shape.split("x"))
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        flops = 2.0 * m * k * n
        t0 = time.perf_counter()
        for _ in range(5):
            a @ b
        print(f"{shape}: numpy {flops * 5 / (time.perf_counter() - t0) / 1e9:.1f} GFLOP/s")
        ref = a @ b
        with kg.tidy():
            ga, gb = kg.tensor(a), kg.tensor(b)
            for config in args.configs or [None]:
                if config:
                    values = tuple(int(v) for v in config.split(","))
                    mm._block_config = lambda M, N, values=values: values
                else:
                    mm._block_config = original
                wall, cpu = timed(lambda: mm.matmul(ga, gb), args.repeats)
                out = mm.matmul(ga, gb)
                err = float(np.max(np.abs(out.numpy() - ref)))
                out.dispose()
                print(f"  {config or 'default'}: {flops / wall / 1e9:.2f} GFLOP/s wall, "
                      f"{flops / cpu / 1e9:.2f} cpu-based, max abs err {err:.1e}", flush=True)
    mm._block_config = original


if __name__ == "__main__":
    main()
