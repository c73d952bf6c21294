#!/usr/bin/env python
"""What a CPU-only user would run instead of kerasgl: ONNX Runtime (CPUExecutionProvider) on the
same models, converted from tf-keras with tf2onnx. scripts/bench.py runs this script with
--onnxruntime-python (or KERASGL_BENCH_ORT_PYTHON) and prints its figures beside kerasgl's and
Keras's; it also runs alone.

It needs TensorFlow, which kerasgl never does: run it with the python of a separate environment,
outside the repository, e.g.

    python3 -m venv /work/ort-venv
    /work/ort-venv/bin/pip install tensorflow-cpu==2.21.0 onnxruntime==1.30.0 tf2onnx==1.17.0
    /work/ort-venv/bin/pip install --no-deps tf-keras==2.21.0   # its dependency is `tensorflow`,
                                                                # which tensorflow-cpu already is
    /work/ort-venv/bin/python scripts/bench_onnxruntime.py --models MobileNetV2 --json /tmp/ort.json
    /work/ort-venv/bin/python scripts/bench_onnxruntime.py --check      # imports and versions only

Per model (the recipe of scripts/bench.py's build_keras_model: keras.applications with
weights=None and classifier_activation=None, seed 0, random BatchNormalization statistics; the
same input generator): the tf-keras model is converted to ONNX (batch dimension left free) and the
.onnx cached under --cache-dir, keyed by the weights' hash and the converter's version, so that a
second run skips the conversion. Then:
- first_s: session creation (InferenceSession from the .onnx file) to the first batch-1 result;
- b1_ms: median batch-1 latency over up to --repeats runs after a warm-up;
- bn_first_s, bn_images_per_s: the first batch-N run, then the median batch-N throughput;
- max_abs_error: ONNX Runtime's batch-1 output against tf-keras's own (model.predict), with
  max_abs_expected for scale.
The kerasgl models of scripts/bench.py are built by Keras 3 and have other random weights (the two
Keras versions initialise differently); the timings do not depend on the weights' values.

Prints progress on stderr and the result as JSON (to --json, or stdout): the machine (CPU model,
cores, load average), the versions of onnxruntime, onnx, tensorflow, tf-keras, tf2onnx, the
thread count and the settings.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")       # no oneDNN / CUDA notices on stderr
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")        # tf.keras inside tf2onnx is tf-keras too

import numpy as np  # noqa: E402

import bench_recipes  # noqa: E402  (scripts/, beside this file)

DEFAULT_MODELS = ("MobileNetV2", "ResNet50", "EfficientNetB0")
DEFAULT_CACHE = os.path.join(tempfile.gettempdir(), "kerasgl-bench-onnx")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# =================================================================================================
# Timing (as scripts/bench.py: a warm-up, then the median of repeats cut to a time budget)
# =================================================================================================
def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(fn, repeats: int, budget_s: float, warmups: int = 1) -> dict:
    for _ in range(warmups):
        fn()
    times = [timed(fn)]
    n = max(1, min(repeats, int(budget_s / times[0]))) if times[0] > 0 else repeats
    times += [timed(fn) for _ in range(n - 1)]
    return {"median_s": statistics.median(times), "min_s": min(times), "repeats": n}


# =================================================================================================
# Machine and versions
# =================================================================================================


def versions() -> dict:
    import onnx
    import onnxruntime
    import tensorflow as tf
    import tf2onnx
    import tf_keras
    return {"python": platform.python_version(), "numpy": np.__version__,
            "onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__,
            "tensorflow": tf.__version__, "tf_keras": tf_keras.__version__,
            "tf2onnx": tf2onnx.__version__}


# =================================================================================================
# Models: tf-keras, converted to ONNX
# =================================================================================================
def build_tf_keras_model(name: str, size: int):
    """scripts/bench.py's model, in tf-keras."""
    import tf_keras as keras
    return bench_recipes.build_model(keras, name, size)


def model_inputs(name: str, model, batch: int) -> np.ndarray:
    """scripts/bench.py's model_inputs."""
    shape = tuple(model.inputs[0].shape[1:])
    x = np.random.default_rng(2).uniform(0, 1, (batch,) + shape).astype("float32")
    return x * 255.0 if name.startswith("EfficientNet") else x


def weights_digest(model) -> str:
    digest = hashlib.sha1()
    for w in model.get_weights():
        digest.update(np.ascontiguousarray(w).tobytes())
    return digest.hexdigest()[:16]


def convert(model, name: str, cache_dir: str, opset: int | None) -> tuple[str, float, bool]:
    """(path of the .onnx, seconds the conversion took, whether it came from the cache)."""
    import tensorflow as tf
    import tf2onnx
    os.makedirs(cache_dir, exist_ok=True)
    opset = opset or tf2onnx.constants.PREFERRED_OPSET
    key = f"{name}-{weights_digest(model)}-tf2onnx{tf2onnx.__version__}-opset{opset}"
    path = os.path.join(cache_dir, key + ".onnx")
    if os.path.exists(path):
        return path, 0.0, True
    start = time.perf_counter()
    spec = (tf.TensorSpec((None,) + tuple(model.inputs[0].shape[1:]), tf.float32, name="input"),)
    tmp = path + f".{os.getpid()}.tmp"
    tf2onnx.convert.from_keras(model, input_signature=spec, opset=opset, output_path=tmp)
    os.replace(tmp, path)
    return path, time.perf_counter() - start, False


def session_options(threads: int):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


def bench_one(name: str, args) -> dict:
    import onnxruntime as ort
    row = {"model": name, "batch": args.batch}
    log(f"onnxruntime: {name}: tf-keras model ...")
    model = build_tf_keras_model(name, args.size)
    x1, xb = model_inputs(name, model, 1), model_inputs(name, model, args.batch)
    row.update(input=list(x1.shape[1:]), params=int(model.count_params()))
    expected = np.asarray(model.predict(x1, verbose=0))
    path, row["convert_s"], row["onnx_cached"] = convert(model, name, args.cache_dir, args.opset)
    row["onnx_path"] = path
    del model
    how = "cached" if row["onnx_cached"] else f"converted in {row['convert_s']:.1f} s"
    log(f"onnxruntime: {name}: {how}: {path}; timing ...")

    start = time.perf_counter()
    session = ort.InferenceSession(path, session_options(args.threads),
                                   providers=["CPUExecutionProvider"])
    feed_name = session.get_inputs()[0].name
    y = session.run(None, {feed_name: x1})[0]
    row["first_s"] = time.perf_counter() - start
    row["providers"] = session.get_providers()
    row["max_abs_error"] = float(np.max(np.abs(y - expected)))
    row["max_abs_expected"] = float(np.max(np.abs(expected)))

    b1 = measure(lambda: session.run(None, {feed_name: x1}), args.repeats, args.budget)
    row.update(b1_ms=b1["median_s"] * 1e3, b1_best_ms=b1["min_s"] * 1e3, b1_repeats=b1["repeats"])
    row["bn_first_s"] = timed(lambda: session.run(None, {feed_name: xb}))
    bn = measure(lambda: session.run(None, {feed_name: xb}), args.repeats, 2 * args.budget,
                 warmups=0)      # the first batch-N run above was the warm-up
    row.update(bn_s=bn["median_s"], bn_repeats=bn["repeats"],
               bn_images_per_s=args.batch / bn["median_s"])
    log(f"onnxruntime: {name}: batch 1 {row['b1_ms']:.1f} ms, batch {args.batch} "
        f"{row['bn_images_per_s']:.1f} img/s, max abs error {row['max_abs_error']:.1e}")
    return row


# =================================================================================================
# Main
# =================================================================================================
def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="comma-separated: small_cnn or tf_keras.applications names "
                             f"(default {','.join(DEFAULT_MODELS)})")
    parser.add_argument("--batch", type=int, default=32, help="batch of the throughput figure")
    parser.add_argument("--size", type=int, default=224, help="input size of the ImageNet models")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per figure, at most")
    parser.add_argument("--budget", type=float, default=8.0,
                        help="seconds of timed runs per figure before repeats are cut "
                             "(twice that at batch N)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="ONNX Runtime's intra-op threads (default: this machine's cores, "
                             f"{os.cpu_count()})")
    parser.add_argument("--opset", type=int, help="ONNX opset (default: tf2onnx's)")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE,
                        help=f"where the converted .onnx files are kept (default {DEFAULT_CACHE})")
    parser.add_argument("--json", help="write the result here (default: print it on stdout)")
    parser.add_argument("--check", action="store_true",
                        help="import everything and print the versions as JSON, measure nothing")
    args = parser.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m and m != "none"]
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.check:
        print(json.dumps({"versions": versions()}))
        return 0
    import onnxruntime as ort
    import tf2onnx
    started = time.perf_counter()
    result = {
        "env": {"cpu": bench_recipes.cpu_model(), "cores": os.cpu_count(),
                "load_average_start": list(os.getloadavg()), "versions": versions(),
                "provider": "CPUExecutionProvider", "threads": args.threads,
                "inter_op_threads": 1, "graph_optimization": "ORT_ENABLE_ALL",
                "opset": args.opset or tf2onnx.constants.PREFERRED_OPSET,
                "available_providers": ort.get_available_providers(),
                "command": " ".join(["python", "scripts/bench_onnxruntime.py"]
                                    + (sys.argv[1:] if argv is None else list(argv)))},
        "settings": {"models": args.models, "batch": args.batch, "size": args.size,
                     "repeats": args.repeats, "budget_s": args.budget,
                     "cache_dir": args.cache_dir},
        "models": []}
    for name in args.models:
        try:
            row = bench_one(name, args)
        except Exception:
            row = {"model": name,
                   "error": "\n".join(traceback.format_exc().strip().splitlines()[-12:])}
            log(f"onnxruntime: {name} failed:\n{row['error']}")
        result["models"].append(row)
    result["total_s"] = time.perf_counter() - started
    result["env"]["load_average_end"] = list(os.getloadavg())
    text = json.dumps(result, indent=1)
    if args.json:
        with open(args.json, "w") as handle:
            handle.write(text)
        log(f"onnxruntime: wrote {args.json}")
    else:
        print(text)
    return 1 if any("error" in row for row in result["models"]) else 0


if __name__ == "__main__":
    sys.exit(main())
