#!/usr/bin/env python
"""kerasgl's real-GPU targets, for a machine with an NVIDIA GPU driven through EGL:
GEMM 4096x4096 in kerasgl next to torch's float32 matmul (TF32 off) on the same GPU, and
MobileNetV2 batch-1 latency (target: under 2 ms). Needs no Keras: pass a saved .keras file.

    python scripts/bench_gpu.py --model mobilenetv2.keras [--json out.json]

Written for scripts/gpu_check.sh; NOT YET RUN on a GPU (no device machine has been lent to a
session since it was written): expect to adjust it on the first run.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

import kerasgl as kg
from kerasgl.runtime import context


def median_ms(fn, repeats=20, sync=lambda: None):
    fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def gemm(n: int) -> dict:
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    flops = 2.0 * n ** 3
    with kg.tidy():
        ga, gb = kg.tensor(a), kg.tensor(b)
        ms = median_ms(lambda: (ga @ gb).dispose(), sync=context.get_context().finish)
    row = {"n": n, "kerasgl_ms": ms, "kerasgl_tflops": flops / ms / 1e9}
    try:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        tms = median_ms(lambda: ta @ tb, sync=torch.cuda.synchronize)
        row.update(torch_ms=tms, torch_tflops=flops / tms / 1e9, fraction_of_torch=tms / ms)
    except Exception as exc:  # torch missing or no CUDA: report kerasgl alone
        row["torch_error"] = str(exc)
    return row


def model_latency(path: str) -> dict:
    with kg.load_model(path) as model:
        shape = (1,) + tuple(d for d in model.inputs[0].shape[1:])
        x = np.random.default_rng(0).uniform(0, 1, shape).astype("float32")
        start = time.perf_counter()
        model.predict(x, verbose=0)
        first = time.perf_counter() - start
        for _ in range(3):
            model.predict(x, verbose=0)         # record and build the execution plan
        ms = median_ms(lambda: model.predict(x, verbose=0), repeats=50)
        return {"model": path, "first_predict_s": first, "batch1_ms": ms,
                "plan": str(model.plan_info())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    info = kg.info()
    result = {"renderer": info.renderer, "version": info.version, "gemm": [gemm(4096)]}
    if args.model:
        result["model"] = model_latency(args.model)
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
