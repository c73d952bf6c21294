#!/usr/bin/env python
"""Cold-cache first-call latency: how much of load_model -> first predict is shader compiling.

    python scripts/probe_compile.py [--models MobileNetV2,ResNet50] [--size 224] [--repeats 5]

For each model, Keras builds it (weights=None: nothing downloaded) and saves it as .keras under
/tmp/kerasgl_probe (reused between runs); then a fresh process with Mesa's on-disk shader cache
disabled (MESA_SHADER_CACHE_DISABLE=true, what a fresh machine or CI sees) times load_model ->
first predict, and every program compile on the way (kerasgl.runtime.shaders.program wrapped from
outside: only calls that miss the program cache are timed), then the steady-state median.
Prints the totals and the slowest (file, defines) variants.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

os.environ.setdefault("KERAS_BACKEND", "jax")
CACHE_DIR = "/tmp/kerasgl_probe"

CHILD = r"""
import sys, time, json, statistics, numpy as np
import kerasgl as kg
from kerasgl.runtime import shaders
compiles = []
original = shaders.program
def timed(name, defines=None):
    key = (name, tuple(sorted((defines or {}).items())))
    hit = shaders._cache.get(key)
    if hit is not None and hit.alive:
        return hit.handle
    t = time.perf_counter()
    handle = original(name, defines)
    compiles.append((time.perf_counter() - t, name, dict(defines or {})))
    return handle
shaders.program = timed
# llvmpipe turns a program into machine code (LLVM) at its first dispatch, not at link: time the
# first dispatch of each (file, defines) too, minus its later dispatches' median = the JIT cost.
from kerasgl.ops import dispatch
dispatches = {}
original_run = dispatch.run
def timed_run(name, **kwargs):
    t = time.perf_counter()
    result = original_run(name, **kwargs)
    key = json.dumps([name, sorted((kwargs.get("defines") or {}).items())])
    dispatches.setdefault(key, []).append(time.perf_counter() - t)
    return result
dispatch.run = timed_run
x = np.load(sys.argv[2])
start = time.perf_counter()
model = kg.load_model(sys.argv[1])
loaded = time.perf_counter() - start
model.predict(x, verbose=0)
first = time.perf_counter() - start
jit = []
for key, secs in dispatches.items():
    rest = sorted(secs[1:])
    jit.append((secs[0] - (rest[len(rest) // 2] if rest else 0.0), key, len(secs)))
times = []
for _ in range(int(sys.argv[3]) + 1):
    t = time.perf_counter(); model.predict(x, verbose=0); times.append((time.perf_counter() - t) * 1e3)
print(json.dumps({"first_s": first, "load_s": loaded, "steady_ms": statistics.median(times[1:]),
                  "compiles": compiles, "jit": jit}))
"""


def model_files(name: str, size: int) -> tuple[str, str]:
    """(.keras path, .npy input path), built once and kept under CACHE_DIR."""
    import numpy as np
    os.makedirs(CACHE_DIR, exist_ok=True)
    path = os.path.join(CACHE_DIR, f"{name}_{size}.keras")
    xpath = os.path.join(CACHE_DIR, f"{name}_{size}.npy")
    if not (os.path.exists(path) and os.path.exists(xpath)):
        import keras
        keras.utils.set_random_seed(0)
        model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3))
        model.save(path)
        x = np.random.default_rng(0).uniform(0, 1, (1, size, size, 3)).astype("float32")
        np.save(xpath, x)
    return path, xpath


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="MobileNetV2,ResNet50")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args(argv)
    env = dict(os.environ, MESA_SHADER_CACHE_DISABLE="true")
    for name in args.models.split(","):
        path, xpath = model_files(name, args.size)
        out = subprocess.run([sys.executable, "-c", CHILD, path, xpath, str(args.repeats)],
                             capture_output=True, text=True, env=env)
        if out.returncode:
            print(out.stderr, file=sys.stderr)
            return 1
        r = json.loads(out.stdout.strip().splitlines()[-1])
        compiles = r["compiles"]
        total = sum(c[0] for c in compiles)
        by_file: dict[str, list] = {}
        for seconds, shader, _ in compiles:
            by_file.setdefault(shader, []).append(seconds)
        jit = sorted(r["jit"], key=lambda j: -j[0])
        print(f"{name} {args.size}: first call {r['first_s']:.2f} s (load_model {r['load_s']:.2f} s, "
              f"linking {total:.2f} s, first dispatches over later ones {sum(j[0] for j in jit):.2f} s; "
              f"{len(compiles)} programs), steady {r['steady_ms']:.1f} ms")
        for shader, secs in sorted(by_file.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {shader:28s} {len(secs):3d} programs {sum(secs):6.2f} s")
        for seconds, shader, defines in sorted(compiles, key=lambda c: -c[0])[:args.top]:
            keep = {k: v for k, v in defines.items() if k != "LOCAL_SIZE"}
            print(f"    {seconds:5.2f} s {shader} {keep}")
        print("  slowest first dispatches (JIT) - seconds, calls, variant:")
        for seconds, key, calls in jit[:args.top]:
            shader, defines = json.loads(key)
            keep = {k: v for k, v in defines if k != "LOCAL_SIZE"}
            print(f"    {seconds:5.2f} s x{calls:<3d} {shader} {keep}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
