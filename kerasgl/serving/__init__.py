"""kerasgl serve: Keras models behind TensorFlow Serving's REST API and the Open Inference
Protocol (KServe v2, Triton's HTTP and gRPC APIs), with dynamic batching.

    server.py               the `kerasgl serve` command: loading, uvicorn
    options.py              its options, checked before anything is loaded
    lifecycle.py            start, stop within --drain-timeout-s, the GPU watchdog
    service.py              what every front asks: models, availability, deadlines, inference
    failures.py             how a request fails: statuses, messages, internal errors
    app.py                  the HTTP routes (Starlette); TF Serving's REST API
    http_handling.py        what the HTTP fronts share: admission, body, parsing, errors
    tf_serving_format.py    TF Serving's JSON: requests, predictions, status, metadata
    open_inference.py       the Open Inference Protocol's tensors and metadata
    open_inference_http.py  ... over HTTP (/v2), with the binary tensor data extension
    grpc_front.py           ... over gRPC (--grpc-port); protos/ holds its .proto
    validation.py           each request's inputs checked before it joins a batch
    batching.py             dynamic batching (TF Serving's batch scheduler, on one kg.Worker)
    models.py               the served models, by name
    metrics.py              Prometheus metrics

Importing it imports uvicorn, starlette and prometheus_client (the `serve` extra; grpcio and
protobuf too, where installed); kerasgl itself never does (cli.py imports it for `kerasgl
serve` only).
"""
from .server import ServeConfig, ServeSetupError, serve

__all__ = ["ServeConfig", "ServeSetupError", "serve"]
