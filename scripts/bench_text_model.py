#!/usr/bin/env python
"""A text model's predict, eager next to planned: Embedding + LSTM + Dense at batch 1 and 32.

    python scripts/bench_text_model.py [--batches 1,32] [--repeats 20] [--seq 32] [--vocab 5000]

Text models used to run eagerly on every call: the Embedding's range check read the indices'
verdict back in the middle of the call, which no execution plan can replay. The check is now the
GPU's, read with the outputs (kerasgl/ops/gpu_checks.py), and the model is planned. "eager" here
is predict with use_plans = False, the way such a model ran before; "planned" is the default.
Both are timed in one process, interleaved (machine load hits both alike): the median of
`--repeats` calls each, after warm-up, with the results checked equal.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def build(vocab: int, seq: int, path: str) -> None:
    import keras
    keras.utils.set_random_seed(0)
    L = keras.layers
    model = keras.Sequential([keras.Input((seq,), dtype="int32"), L.Embedding(vocab, 64),
                              L.LSTM(64), L.Dense(8, activation="softmax")], name="lstm_text")
    model.save(path)


def median_call(model, x, repeats: int, plans: bool) -> float:
    model.use_plans = plans
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.predict(x, batch_size=len(x), verbose=0)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=5000)
    args = parser.parse_args(argv)
    import kerasgl as kg
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "lstm_text.keras")
        build(args.vocab, args.seq, path)
        print(f"Embedding({args.vocab}, 64) + LSTM(64) + Dense(8), sequences of {args.seq}; "
              f"median of {args.repeats} calls; {kg.info().renderer}")
        print(f"{'batch':>6}{'eager ms':>12}{'planned ms':>12}{'speed-up':>10}  plan")
        with kg.load_model(path) as model:
            for batch in (int(b) for b in args.batches.split(",")):
                x = np.random.default_rng(batch).integers(0, args.vocab, (batch, args.seq))
                x = x.astype("int32")
                info = model.warm_up(batch)
                model.use_plans = False
                eager_out = model.predict(x, verbose=0)
                model.use_plans = True
                planned_out = model.predict(x, verbose=0)
                assert np.array_equal(eager_out, planned_out), "planned differs from eager"
                eager, planned = [], []
                for _ in range(3):               # interleaved thirds
                    eager.append(median_call(model, x, max(1, args.repeats // 3), False))
                    model.warm_up(batch)             # (turning plans off freed them)
                    planned.append(median_call(model, x, max(1, args.repeats // 3), True))
                e, p = statistics.median(eager), statistics.median(planned)
                print(f"{batch:>6}{e * 1e3:>12.2f}{p * 1e3:>12.2f}{e / p:>9.2f}x  "
                      f"{info.status if info else 'off'}, {info.dispatches if info else 0} "
                      "dispatches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
