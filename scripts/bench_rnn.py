#!/usr/bin/env python
"""Time per step of a 2-layer LSTM (hidden 128, 100 steps, 32 input features) at batch 1 and 32,
kerasgl next to Keras (JAX backend) in the same run.

    python scripts/bench_rnn.py [--repeats 5] [--steps 100] [--units 128]

Each layer of kerasgl runs as one matmul (the input projection of every step) plus one dispatch
for the whole recurrence, with up to 4 sequences per work group sharing each load of the
recurrent kernel. On the 2-core llvmpipe dev box this took batch 32 from ~5.0 to ~2.5 ms per step
(about 30x -> 10x Keras-JAX); batch 1 stays at ~0.16-0.18 ms per step (~5x). Reported: median predict time / steps, after a warm-up call (shader
compiles and XLA compilation excluded).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def median_s(fn, repeats: int) -> float:
    fn()                                   # warm-up: compiles
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--features", type=int, default=32)
    args = parser.parse_args()

    import keras
    import numpy as np

    import kerasgl as kg

    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((args.steps, args.features)),
        keras.layers.LSTM(args.units, return_sequences=True),
        keras.layers.LSTM(args.units),
    ], name="lstm2")
    path = os.path.join(tempfile.mkdtemp(), "lstm2.keras")
    model.save(path)
    print(f"2-layer LSTM, hidden {args.units}, {args.steps} steps, {args.features} features; "
          f"median of {args.repeats} (ms per step)")
    print(f"{'batch':>5} {'kerasgl':>10} {'keras-jax':>10} {'ratio':>7}  max|diff|")
    with kg.load_model(path) as loaded:
        for batch in (1, 32):
            x = np.random.default_rng(batch).uniform(-1, 1, (batch, args.steps, args.features))
            x = x.astype("float32")
            ours = median_s(lambda: loaded.predict(x, batch_size=batch, verbose=0), args.repeats)
            theirs = median_s(lambda: model.predict(x, batch_size=batch, verbose=0), args.repeats)
            diff = np.abs(loaded.predict(x, batch_size=batch, verbose=0)
                          - model.predict(x, batch_size=batch, verbose=0)).max()
            print(f"{batch:>5} {1e3 * ours / args.steps:>10.3f} {1e3 * theirs / args.steps:>10.3f} "
                  f"{ours / theirs:>7.2f}  {diff:.1e}")


if __name__ == "__main__":
    main()
