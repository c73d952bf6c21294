#!/usr/bin/env python
"""First-call and steady-state predict latency, kerasgl next to Keras (JAX backend), one run.

    python scripts/bench_predict.py [--models small_cnn,MobileNetV2] [--size 224] [--repeats 10]

For each model: Keras builds it (weights=None: nothing downloaded) and saves it as .keras; then
  - kerasgl first call: load_model -> first predict returned (file reading, weight upload, shader
    compiles, first dispatches), in a fresh process so no shader is cached;
  - kerasgl steady state: median batch-1 predict latency after warm-up;
  - Keras-JAX: first predict (trace + XLA compile) and the steady-state median, same input.
Prints a table and the ratio; writes JSON with --json PATH.
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


def build(name: str, size: int):
    import keras
    keras.utils.set_random_seed(0)
    if name == "small_cnn":
        return keras.Sequential([
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(64, 3, activation="relu"), keras.layers.MaxPooling2D(),
            keras.layers.Flatten(), keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10, activation="softmax")], name="small_cnn")
    return getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3))


def median_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


CHILD = r"""
import sys, time, json, statistics, numpy as np
start = time.perf_counter()
import kerasgl as kg
model = kg.load_model(sys.argv[1])
x = np.load(sys.argv[2])
model.predict(x, verbose=0)
first = time.perf_counter() - start
times = []
for _ in range(int(sys.argv[3]) + 1):
    t = time.perf_counter(); model.predict(x, verbose=0); times.append((time.perf_counter() - t) * 1e3)
print(json.dumps({"first_s": first, "steady_ms": statistics.median(times[1:]), "renderer": kg.info().renderer}))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="small_cnn,MobileNetV2")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    import numpy as np
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            model = build(name, args.size)
            x = np.random.default_rng(0).uniform(0, 1, (1,) + tuple(model.inputs[0].shape[1:])).astype("float32")
            path, xpath = os.path.join(tmp, f"{name}.keras"), os.path.join(tmp, f"{name}.npy")
            model.save(path)
            np.save(xpath, x)
            start = time.perf_counter()
            model.predict(x, verbose=0)
            keras_first = time.perf_counter() - start
            keras_ms = median_ms(lambda: model.predict(x, verbose=0), args.repeats)
            out = subprocess.run([sys.executable, "-c", CHILD, path, xpath, str(args.repeats)],
                                 capture_output=True, text=True)
            if out.returncode:
                print(out.stderr, file=sys.stderr)
                return 1
            gl = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append({"model": name, "kerasgl_first_s": gl["first_s"], "kerasgl_ms": gl["steady_ms"],
                         "keras_first_s": keras_first, "keras_ms": keras_ms,
                         "speedup": keras_ms / gl["steady_ms"], "renderer": gl["renderer"]})
    print(f"{'model':14s} {'kerasgl first':>14s} {'kerasgl ms':>11s} {'keras first':>12s} "
          f"{'keras ms':>9s} {'keras/kerasgl':>13s}")
    for r in rows:
        print(f"{r['model']:14s} {r['kerasgl_first_s']:13.2f}s {r['kerasgl_ms']:11.1f} "
              f"{r['keras_first_s']:11.2f}s {r['keras_ms']:9.1f} {r['speedup']:13.2f}")
    print(f"renderer: {rows[0]['renderer'] if rows else '?'}; batch 1, median of {args.repeats}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
