#!/usr/bin/env python
"""`kerasgl serve` under load: requests/s and latency (p50, p99) at several client concurrencies,
dynamic batching on and off, over TF Serving's REST API (JSON) and the Open Inference Protocol's
gRPC (tritonclient.grpc.aio, raw tensors) against the same server, next to batch-1
model.predict in one process, for the small CNN shipped with kerasgl
(kerasgl/_data/digits_cnn.keras) and MobileNetV2 (keras.applications, weights=None).

    python scripts/bench_serve.py                       # the figures of docs/serving.md
    python scripts/bench_serve.py --quick               # a short run (a few seconds per point)
    python scripts/bench_serve.py --models small_cnn --concurrency 1,8 --requests 500
    python scripts/bench_serve.py --ray-actors 1,2      # also kerasgl.ray.Predictor, 1 and 2 actors
    python scripts/bench_serve.py --protocols rest      # REST only (gRPC needs tritonclient[grpc])

Each point starts from a warm server (every batch size's plan compiled before it listens) and
sends batch-1 requests (one example; REST: row format, bodies encoded once beforehand; gRPC: one
raw FP32 tensor) from that many concurrent clients (httpx or tritonclient.grpc.aio, asyncio) on
127.0.0.1 for a fixed number of requests. The clients run
on the same machine as the server and take CPU from it: on a machine with few cores the figures
are the server's and the clients' together. Writes JSON (--json), the table (--markdown) and a
plot (--plot, when matplotlib is installed).
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("KERASGL_COMPILE_AHEAD", "0")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402

DIGITS = os.path.join(REPO, "kerasgl", "_data", "digits_cnn.keras")
READY = re.compile(r"on http://127\.0\.0\.1:(\d+) ")
GRPC = re.compile(r" and grpc://127\.0\.0\.1:(\d+) ")


def make_models(folder: str, names: list[str], image_size: int) -> dict:
    paths = {}
    if "small_cnn" in names:
        paths["small_cnn"] = DIGITS
    if "MobileNetV2" in names:
        import keras
        path = os.path.join(folder, "mobilenet_v2.keras")
        keras.applications.MobileNetV2(weights=None, input_shape=(image_size, image_size, 3)).save(path)
        paths["MobileNetV2"] = path
    return paths


def in_process_batch1(path: str, x: np.ndarray, requests: int) -> dict:
    """Batch-1 model.predict in this process: the latency with no HTTP, JSON or queue at all."""
    import kerasgl as kg
    with kg.load_model(path) as model:
        model.warm_up(1)
        times = []
        for i in range(requests):
            started = time.perf_counter()
            model.predict(x[i % len(x)][None], verbose=0)
            times.append(time.perf_counter() - started)
    return summarize(times, sum(times))


def summarize(latencies: list, seconds: float) -> dict:
    ordered = sorted(latencies)
    return {"requests": len(ordered), "requests_per_s": len(ordered) / seconds,
            "p50_ms": 1000 * statistics.median(ordered),
            "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]}


class Server:
    def __init__(self, name: str, path: str, batching: bool, max_batch: int, grpc: bool):
        command = [sys.executable, "-m", "kerasgl.cli", "serve", "--model", f"{name}={path}",
                   "--port", "0", "--max-batch-size", str(max_batch), "--max-queue", "4096"]
        if not batching:
            command.append("--no-batching")
        if grpc:
            command += ["--grpc-port", "0"]
        env = {**os.environ, "PYTHONPATH": REPO}
        self.process = subprocess.Popen(command, cwd=REPO, env=env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for line in self.process.stdout:
            found = READY.search(line)
            if found:
                self.url = f"http://127.0.0.1:{found.group(1)}"
                grpc_port = GRPC.search(line)
                self.grpc_target = f"127.0.0.1:{grpc_port.group(1)}" if grpc_port else None
                return
        raise RuntimeError(f"the server did not start (exit {self.process.wait()})")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=60)


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{name}{{[^}}]*}} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def _timed_clients(send, concurrency: int, requests: int, url: str) -> dict:
    """`await send(i)` (True when answered 200) for requests 0..requests-1, spread over
    `concurrency` clients; latencies and the server's mean batch (from its metrics) over them."""
    import httpx
    async with httpx.AsyncClient(base_url=url, timeout=120) as metrics_client:
        for i in range(2):                                        # connections open, caches warm
            if not await send(i):
                raise RuntimeError("the warm-up requests failed")
        before = (await metrics_client.get("/monitoring/prometheus/metrics")).text
        latencies, failures = [], 0

        async def client(c: int) -> None:
            nonlocal failures
            for i in range(c, requests, concurrency):
                started = time.perf_counter()
                failures += not await send(i)
                latencies.append(time.perf_counter() - started)
        started = time.perf_counter()
        await asyncio.gather(*(client(c) for c in range(concurrency)))
        seconds = time.perf_counter() - started
        after = (await metrics_client.get("/monitoring/prometheus/metrics")).text
    result = summarize(latencies, seconds)
    batches = (metric(after, "kerasgl_serving_batch_size_count")
               - metric(before, "kerasgl_serving_batch_size_count"))
    examples = (metric(after, "kerasgl_serving_batch_size_sum")
                - metric(before, "kerasgl_serving_batch_size_sum"))
    result.update(failures=failures, mean_batch=examples / batches if batches else 0.0)
    return result


async def load(url: str, model: str, bodies: list, concurrency: int, requests: int) -> dict:
    """TF Serving's REST API: JSON bodies over HTTP (httpx)."""
    import httpx
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as session:
        where = f"/v1/models/{model}:predict"

        async def send(i: int) -> bool:
            return (await session.post(where, content=bodies[i % len(bodies)])).status_code == 200
        return await _timed_clients(send, concurrency, requests, url)


async def load_grpc(target: str, url: str, model: str, x: np.ndarray, input_name: str,
                    concurrency: int, requests: int) -> dict:
    """The Open Inference Protocol over gRPC: raw FP32 tensors (tritonclient.grpc.aio)."""
    import tritonclient.grpc as triton
    import tritonclient.grpc.aio as triton_aio
    from tritonclient.utils import InferenceServerException
    tensors = []
    for i in range(len(x)):
        tensor = triton.InferInput(input_name, [1, *x.shape[1:]], "FP32")
        tensor.set_data_from_numpy(x[i:i + 1])
        tensors.append(tensor)
    session = triton_aio.InferenceServerClient(target)
    try:
        async def send(i: int) -> bool:
            try:
                await session.infer(model, [tensors[i % len(tensors)]], client_timeout=120)
                return True
            except InferenceServerException:
                return False
        return await _timed_clients(send, concurrency, requests, url)
    finally:
        await session.close()


def ray_actors(path: str, images: int, batch_size: int, actors: list) -> list:
    """Images/s of ds.map_batches(kerasgl.ray.Predictor) over `images` random inputs, with each
    number of actors (a local Ray cluster of every CPU; num_gpus=0: llvmpipe)."""
    import ray
    import kerasgl as kg
    import kerasgl.ray
    with kg.load_model(path) as model:
        shape = model.inputs[0].shape[1:]
    kg.shutdown()
    x = np.random.default_rng(1).random((images, *shape), dtype=np.float32)
    ray.init(include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": REPO, "KERASGL_COMPILE_AHEAD": "0"}})
    points = []
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        for count in actors:
            def run(data):
                started = time.perf_counter()
                ds = ray.data.from_numpy(np.array_split(data, max(2, min(len(data), 4 * count))))
                rows = ds.map_batches(kerasgl.ray.Predictor, fn_constructor_kwargs={"path": path},
                                      concurrency=count, num_gpus=0,
                                      batch_size=batch_size).materialize().count()
                return rows, time.perf_counter() - started
            run(x[:2 * count])                      # Mesa's shader cache filled once
            # Each map_batches starts its actors afresh: the fixed cost (actors started, model
            # loaded, first batch compiled) is timed on a few rows, the rest is the throughput.
            _, fixed = run(x[:2 * count])
            rows, seconds = run(x)
            # (None when the run was too short for the start-up to be told apart)
            steady = (rows - 2 * count) / (seconds - fixed) if seconds > 1.5 * fixed else None
            points.append({"actors": count, "images": rows, "seconds": seconds,
                           "fixed_seconds": fixed, "images_per_s": rows / seconds,
                           "steady_images_per_s": steady})
            print(f"ray: {count} actor(s): {points[-1]}", flush=True)
    finally:
        ray.shutdown()
    return points


def machine() -> dict:
    import kerasgl as kg
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            cpu = next((line.split(":", 1)[1].strip() for line in handle
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    info = kg.info()
    return {"cpu": cpu, "cores": os.cpu_count(), "renderer": info.renderer,
            "gl": info.version, "python": platform.python_version(),
            "date": datetime.date.today().isoformat(),
            # Other work on the machine slows every figure: the 1-minute load at the start.
            "load_average_at_start": os.getloadavg()[0]}


def _rate(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


MODES = {"batching": "serve REST, batching", "grpc_batching": "serve gRPC, batching",
         "no_batching": "serve REST, no batching", "grpc_no_batching": "serve gRPC, no batching"}


def markdown(results: dict) -> str:
    lines = ["| model | mode | clients | requests/s | p50 ms | p99 ms | mean batch |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for model, runs in results["models"].items():
        alone = runs["in_process_batch1"]
        lines.append(f"| {model} | predict() in process, batch 1 | 1 | "
                     f"{_rate(alone['requests_per_s'])} | {alone['p50_ms']:.2f} | "
                     f"{alone['p99_ms']:.2f} | 1 |")
        for mode, shown in MODES.items():
            for point in runs.get(mode, []):
                lines.append(f"| {model} | {shown} | {point['clients']} | "
                             f"{_rate(point['requests_per_s'])} | {point['p50_ms']:.1f} | "
                             f"{point['p99_ms']:.1f} | {point['mean_batch']:.1f} |")
    ray_lines = [f"| {model} | {p['actors']} | {p['images']} | {p['seconds']:.1f} | "
                 f"{p['fixed_seconds']:.1f} | {p['images_per_s']:.1f} | "
                 f"{'-' if p['steady_images_per_s'] is None else round(p['steady_images_per_s'], 1)} |"
                 for model, runs in results["models"].items() for p in runs.get("ray", [])]
    if ray_lines:
        lines += ["", "| model | Ray actors | images | seconds | of which start-up | images/s | "
                      "images/s after start-up |", "|---|---:|---:|---:|---:|---:|---:|"]
        lines += ray_lines
    return "\n".join(lines)


def plot(results: dict, path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot.")
        return
    names = list(results["models"])
    figure, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4), squeeze=False)
    for axis, name in zip(axes[0], names):
        runs = results["models"][name]
        for mode, style in (("batching", "o-"), ("no_batching", "s--"),
                            ("grpc_batching", "^-"), ("grpc_no_batching", "v--")):
            points = runs.get(mode, [])
            if points:
                axis.plot([p["clients"] for p in points], [p["requests_per_s"] for p in points],
                          style, label=MODES[mode])
        axis.axhline(runs["in_process_batch1"]["requests_per_s"], color="gray", linestyle=":",
                     label="predict() in process, batch 1")
        axis.set_xscale("log", base=2)
        axis.set_xlabel("concurrent clients")
        axis.set_ylabel("requests/s")
        axis.set_title(name)
        axis.legend(fontsize=8)
    figure.suptitle(f"kerasgl serve on {results['machine']['renderer']}, "
                    f"{results['machine']['cores']} CPUs", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"wrote {path}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="small_cnn,MobileNetV2")
    parser.add_argument("--concurrency", default="1,4,16,32")
    parser.add_argument("--requests", type=int, default=2000, help="per point, small CNN")
    parser.add_argument("--image-size", type=int, default=224, help="MobileNetV2's input size")
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="few requests per point")
    parser.add_argument("--protocols", default="rest,grpc",
                        help="rest, grpc or both (the same server answers both)")
    parser.add_argument("--ray-actors", default="", help="also time kerasgl.ray.Predictor with "
                        "these numbers of actors (e.g. 1,2; needs ray[data])")
    parser.add_argument("--ray-images", type=int, default=256)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--markdown", help="write the table here")
    parser.add_argument("--plot", help="write a PNG plot here")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    protocols = args.protocols.split(",")
    levels = [int(v) for v in args.concurrency.split(",")]
    requests = {"small_cnn": 300 if args.quick else args.requests,
                "MobileNetV2": 64 if args.quick else max(64, args.requests // 10)}
    results = {"machine": machine(), "settings": vars(args), "models": {}}
    with tempfile.TemporaryDirectory() as folder:
        paths = make_models(folder, names, args.image_size)
        for name, path in paths.items():
            import kerasgl as kg
            with kg.load_model(path) as model:
                shape = model.inputs[0].shape[1:]
                input_name = model.inputs[0].name
            rng = np.random.default_rng(0)
            x = rng.random((8, *shape), dtype=np.float32)
            bodies = [json.dumps({"instances": x[i:i + 1].tolist()}).encode() for i in range(8)]
            runs = {"in_process_batch1": in_process_batch1(path, x, min(200, requests[name])),
                    "body_bytes": len(bodies[0])}
            print(f"{name}: predict() in process, batch 1: {runs['in_process_batch1']}", flush=True)
            kg.shutdown()       # the servers have the CPUs (and llvmpipe's threads) to themselves
            for mode, batching in (("batching", True), ("no_batching", False)):
                server = Server(name, path, batching, args.max_batch_size, "grpc" in protocols)
                try:
                    for clients in levels:
                        loads = {}
                        if "rest" in protocols:
                            loads[mode] = lambda: load(server.url, name, bodies, clients,
                                                       requests[name])
                        if "grpc" in protocols:
                            loads[f"grpc_{mode}"] = lambda: load_grpc(
                                server.grpc_target, server.url, name, x, input_name, clients,
                                requests[name])
                        for key, work in loads.items():          # one protocol at a time
                            point = asyncio.run(work())
                            point["clients"] = clients
                            runs.setdefault(key, []).append(point)
                            print(f"{name}: {MODES[key]}, {clients} clients: {point}", flush=True)
                finally:
                    server.stop()
            results["models"][name] = runs
            if args.ray_actors:
                runs["ray"] = ray_actors(path, 64 if args.quick else args.ray_images,
                                         args.max_batch_size,
                                         [int(v) for v in args.ray_actors.split(",")])
    results["machine"]["load_average_at_end"] = os.getloadavg()[0]
    table = markdown(results)
    print(table)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=1)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(table + "\n")
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
