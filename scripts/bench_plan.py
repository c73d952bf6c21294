#!/usr/bin/env python
"""Eager predict next to planned predict (kerasgl/plans/), in one process, interleaved.

    python scripts/bench_plan.py [--models MobileNetV2,ResNet50] [--size 224] [--repeats 10]
                                 [--chain 200]

For each Keras application (weights=None, built and saved by Keras; nothing downloaded): batch-1
latency with plans off and on (medians over interleaved runs, so machine load hits both alike),
whether the results are bit-identical, and the plan's memory: planned bytes, the peak of live
bytes, and the naive sum of intermediates. --chain N adds a model of N tiny element-wise ops to
measure the fixed cost of one dispatch in each mode.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np  # noqa: E402


def build(name: str, size: int, chain: int):
    import keras
    keras.utils.set_random_seed(0)
    if name == "chain":
        x = keras.Input((64,))
        y = x
        for _ in range(chain):
            y = y * 1.5 + 0.25
        return keras.Model(x, y, name="chain")
    return getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3))


def measure(model, x, repeats: int):
    model.use_plans = False
    eager_out = model.predict(x, verbose=0)
    model.use_plans = True
    for _ in range(3):
        planned_out = model.predict(x, verbose=0)
    times = {False: [], True: []}
    for _ in range(repeats):
        for flag in (False, True):
            model._plans.enabled = flag        # (no clearing: the plan stays built)
            start = time.perf_counter()
            model.predict(x, verbose=0)
            times[flag].append((time.perf_counter() - start) * 1e3)
    model._plans.enabled = True
    return eager_out, planned_out, statistics.median(times[False]), statistics.median(times[True])


def main() -> None:
    import kerasgl as kg
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="MobileNetV2,ResNet50")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--chain", type=int, default=200, help="0 to skip the dispatch-cost model")
    args = parser.parse_args()
    names = [n for n in args.models.split(",") if n] + (["chain"] if args.chain else [])
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            path = os.path.join(folder, f"{name}.keras")
            build(name, args.size, args.chain).save(path)
            shape = (1, 64) if name == "chain" else (1, args.size, args.size, 3)
            x = np.random.default_rng(0).uniform(0, 1, shape).astype("float32")
            with kg.load_model(path) as model:
                eager_out, planned_out, eager, planned = measure(model, x, args.repeats)
                info = model.plan_info()[0]
            same = np.array_equal(eager_out, planned_out)
            print(f"{name}: eager {eager:.2f} ms, planned {planned:.2f} ms "
                  f"({eager / planned:.2f}x), bit-identical: {same}")
            if name == "chain":
                print(f"  per dispatch: eager {eager / info.dispatches * 1e3:.1f} us, planned "
                      f"{planned / info.dispatches * 1e3:.1f} us ({info.dispatches} dispatches)")
            print(f"  {info}")


if __name__ == "__main__":
    main()
