"""Where a model's predict time goes: every dispatch of one eager batch-1 predict timed (with a
GL finish after each), summed by shader and its main defines. Keras builds the model
(weights=None: nothing downloaded).

    python scripts/probe_model_profile.py ResNet50 [--top 25]
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
import numpy as np  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_predict import build
    import kerasgl as kg
    from kerasgl.runtime import context
    from kerasgl.ops import dispatch
    keras_model = build(args.model, args.size)
    x = np.random.default_rng(0).uniform(0, 1, (1,) + tuple(keras_model.inputs[0].shape[1:])).astype("float32")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.keras")
        keras_model.save(path)
        model = kg.load_model(path)
    model.use_plans = False
    model.predict(x, verbose=0)
    ctx = context.get_context()
    totals = collections.defaultdict(lambda: [0.0, 0])
    original = dispatch.run

    def timed_run(name, **kw):
        ctx.finish()
        t0 = time.perf_counter()
        original(name, **kw)
        ctx.finish()
        d = kw.get("defines") or {}
        key = name + " " + " ".join(f"{k}={d[k]}" for k in ("KH", "KW", "STRIDE_H", "PIX", "COUT_VEC",
                                                                 "TM", "NV") if k in d)
        u = kw.get("uniforms") or {}
        if "cin" in u:
            key += f" {u.get('in_h')}x{u.get('in_w')}x{u['cin']}->{u.get('cout')}"
        totals[key][0] += time.perf_counter() - t0
        totals[key][1] += 1

    dispatch.run = timed_run
    t0 = time.perf_counter()
    model.predict(x, verbose=0)
    total = time.perf_counter() - t0
    dispatch.run = original
    print(f"{args.model}: {total * 1e3:.1f} ms eager with a finish per dispatch")
    for key, (seconds, count) in sorted(totals.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"{seconds * 1e3:8.2f} ms {count:4d}x  {key}")


if __name__ == "__main__":
    main()
