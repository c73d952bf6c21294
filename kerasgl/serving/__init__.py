"""kerasgl serve: Keras models behind TensorFlow Serving's REST API, with dynamic batching.

    server.py             the `kerasgl serve` command: options, loading, uvicorn
    app.py                the HTTP routes (Starlette)
    tf_serving_format.py  TF Serving's JSON: requests, predictions, status, metadata, errors
    validation.py         each request's inputs checked before it joins a batch
    batching.py           dynamic batching (TF Serving's batch scheduler, on one kg.Worker)
    models.py             the served models, by name
    metrics.py            Prometheus metrics

Importing it imports uvicorn, starlette and prometheus_client (the `serve` extra); kerasgl
itself never does (cli.py imports it for `kerasgl serve` only).
"""
from .server import ServeConfig, ServeSetupError, serve

__all__ = ["ServeConfig", "ServeSetupError", "serve"]
