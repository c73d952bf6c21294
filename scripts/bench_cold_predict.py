#!/usr/bin/env python
"""Cold first predict (load_model -> first prediction, empty Mesa cache) with the compile-ahead
helper off, on, and as `auto` decides (kerasgl/devices/llvmpipe/compile_ahead.py: only when a
CPU is idle), on a quiet machine and under load (a busy-loop process per CPU).

    python scripts/bench_cold_predict.py [--model MobileNetV2] [--size 224] [--pairs 2]
                                         [--settings off,on,auto] [--loads 0,1]

Each run is a fresh process with an empty Mesa shader cache and kerasgl cache of its own, so
every program is compiled; runs of one load are interleaved across settings (machine load from
elsewhere hits them alike). Prints one line per run and the median per (load, setting).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
start = time.perf_counter()
import numpy as np
import kerasgl as kg
from kerasgl.devices.llvmpipe import compile_ahead
model = kg.load_model(sys.argv[1])
helper = any(h.process is not None for h in compile_ahead._running)
x = np.random.default_rng(0).random((1, *model.input_shape[1:]), dtype=np.float32)
model.predict(x, verbose=0)
print(json.dumps({"seconds": time.perf_counter() - start, "helper": helper}))
model.dispose()
"""


def build(name: str, size: int, path: str) -> None:
    import keras
    keras.utils.set_random_seed(0)
    getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3)).save(path)


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cold_run(path: str, setting: str, workdir: str, tag: str) -> dict:
    env = dict(os.environ, KERASGL_COMPILE_AHEAD=setting, PYTHONPATH=ROOT,
               MESA_SHADER_CACHE_DIR=os.path.join(workdir, f"mesa_{tag}"),
               XDG_CACHE_HOME=os.path.join(workdir, f"xdg_{tag}"))
    out = subprocess.run([sys.executable, "-c", CHILD, path], env=env, capture_output=True,
                         text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="MobileNetV2")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--settings", default="off,on,auto")
    parser.add_argument("--loads", default="0,1", help="0: no busy loop; 1: one per CPU")
    args = parser.parse_args(argv)
    settings = args.settings.split(",")
    results: dict = {}
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, f"{args.model}.keras")
        build(args.model, args.size, path)
        print(f"{args.model} at {args.size}, cold first predict (load_model + predict, empty "
              f"Mesa cache), {cpus()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
        for load in (int(v) for v in args.loads.split(",")):
            loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                     for _ in range(cpus() * load)]
            try:
                time.sleep(1.0 if loops else 0.0)
                for pair in range(args.pairs):
                    for setting in settings:
                        tag = f"{load}_{setting}_{pair}"
                        run = cold_run(path, setting, workdir, tag)
                        results.setdefault((load, setting), []).append(run["seconds"])
                        print(f"  busy loops {len(loops)}  {setting:>4}: {run['seconds']:6.2f} s"
                              f"  helper {'started' if run['helper'] else 'not started'}"
                              f"  (load average {os.getloadavg()[0]:.1f})", flush=True)
            finally:
                for loop in loops:
                    loop.kill()
                    loop.wait()
        print("medians:")
        for (load, setting), seconds in results.items():
            each = ", ".join(f"{s:.1f}" for s in seconds)
            print(f"  {'under load' if load else 'no busy loop':>12}  {setting:>4}: "
                  f"{statistics.median(seconds):6.2f} s  ({each})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
