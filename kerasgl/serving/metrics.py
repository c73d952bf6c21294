"""The server's metrics in Prometheus' text format (GET /monitoring/prometheus/metrics, TF
Serving's usual path), kept by prometheus_client in a registry of the server's own:

    kerasgl_serving_requests_total{model, status}      requests answered, by HTTP status
    kerasgl_serving_request_latency_seconds{model}     from the request's arrival to its answer
    kerasgl_serving_batch_size{model}                  examples per batch run (before padding)
    kerasgl_serving_batch_padding_rows_total{model}    zero rows added to reach an allowed size
    kerasgl_serving_queue_depth{model}                 requests waiting for their batch
    kerasgl_serving_gpu_bytes                          bytes kerasgl holds on the GPU (memory())
    kerasgl_serving_gpu_objects{kind}                  GL buffers, textures, programs held

Labels only ever take the names of the served models ("" for a request naming no served model),
never a value a client chose, so a client cannot grow the registry. Requests over gRPC count
with the HTTP status of their gRPC code (failures.py). A scrape reads values kept up to date as
the server works (the GPU figures are read on the worker after each batch): it never queues
work on the GPU, so it answers while a batch runs.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import CONTENT_TYPE_LATEST  # noqa: F401  (the endpoint's media type)

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
                   10.0)


class ServingMetrics:
    def __init__(self, model_names, max_batch_size: int):
        self.registry = CollectorRegistry()
        self.requests = Counter("kerasgl_serving_requests", "Requests answered, by HTTP status.",
                                ["model", "status"], registry=self.registry)
        self.latency = Histogram("kerasgl_serving_request_latency_seconds",
                                 "Time from a request's arrival to its answer.", ["model"],
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        sizes = sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, max_batch_size})
        self.batch_size = Histogram("kerasgl_serving_batch_size",
                                    "Examples per batch run on the GPU (before padding).",
                                    ["model"], buckets=[s for s in sizes if s <= max_batch_size],
                                    registry=self.registry)
        self.padding = Counter("kerasgl_serving_batch_padding_rows",
                               "Zero rows added to batches to reach an allowed batch size.",
                               ["model"], registry=self.registry)
        self.queue_depth = Gauge("kerasgl_serving_queue_depth",
                                 "Requests waiting for their batch to start.", ["model"],
                                 registry=self.registry)
        self.gpu_bytes = Gauge("kerasgl_serving_gpu_bytes",
                               "Bytes of GPU memory kerasgl holds (kg.memory().num_bytes_in_gpu).",
                               registry=self.registry)
        self.gpu_objects = Gauge("kerasgl_serving_gpu_objects",
                                 "GL objects kerasgl holds, by kind.", ["kind"],
                                 registry=self.registry)
        self.names = set(model_names)
        for name in self.names:                 # every series exists from the start
            self.latency.labels(name)
            self.batch_size.labels(name)
            self.padding.labels(name)

    def label(self, model: str | None) -> str:
        return model if model in self.names else ""

    def answered(self, model: str | None, status: int, seconds: float) -> None:
        name = self.label(model)
        self.requests.labels(name, str(status)).inc()
        if name:
            self.latency.labels(name).observe(seconds)

    def batch_ran(self, model: str, rows: int, padded: int) -> None:
        self.batch_size.labels(model).observe(rows)
        if padded > rows:
            self.padding.labels(model).inc(padded - rows)

    def watch_queue(self, model: str, batcher) -> None:
        self.queue_depth.labels(model).set_function(lambda: batcher.depth)

    def gpu_memory(self, memory) -> None:
        """Keep the GPU figures of `memory` (a kg.MemoryInfo, read on the worker)."""
        self.gpu_bytes.set(memory.num_bytes_in_gpu)
        for kind in ("buffer", "texture", "program"):
            usage = memory.gl_objects.get(kind)
            self.gpu_objects.labels(kind).set(usage.count if usage else 0)

    def render(self) -> bytes:
        """The text exposition of the values kept."""
        return generate_latest(self.registry)
