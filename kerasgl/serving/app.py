"""The HTTP routes (a Starlette app, served by uvicorn: server.py).

    POST /v1/models/NAME[/versions/N]:predict      TF Serving's predict (tf_serving_format.py)
    GET  /v1/models/NAME[/versions/N]              model status
    GET  /v1/models/NAME[/versions/N]/metadata     signature: inputs, outputs, dtypes, shapes
    /v2/...                                        the Open Inference Protocol
                                                   (open_inference_http.py)
    GET  /monitoring/prometheus/metrics            Prometheus text format (metrics.py)

A predict request goes: model found (404) and its queue asked for room (503) -> body read (at
most max_body_bytes: 413) -> JSON parsed and every input validated (400) -> queued for its
model's batcher -> answered with its rows of the batch's outputs, all within the request's
deadline (504). While it waits, the connection is watched: a client that disconnects has its
request dropped from the queue (499 in the metrics, no GPU work); http_handling.py. Request
paths are matched with TF Serving's own patterns, and a model is looked up by name among those
served: nothing in a request can name a file.
"""
from __future__ import annotations

from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import open_inference_http
from . import tf_serving_format as tfs
from .failures import RequestError
from .http_handling import JSON, endpoint, json_error, parse, read_body, unless_disconnected
from .metrics import CONTENT_TYPE_LATEST, ServingMetrics
from .service import Service
from .validation import to_arrays


def tf_serving_routes(service: Service, metrics: ServingMetrics, *, max_body_bytes: int) -> list:
    """TF Serving's REST API: /v1/models/..."""

    def lookup(name: str, version: str | None):
        entry = service.find(name, version)
        if entry is None:
            raise tfs.servable_not_found(name, version)
        return entry

    async def predict(request: Request, name: str, version: str | None, method: str) -> Response:
        entry = lookup(name, version)
        if method != "predict":
            raise RequestError(501, f"kerasgl serve answers :predict only, not :{method}.")
        service.admit(entry)
        body = await read_body(request, max_body_bytes)

        def parsed():
            fmt, columns = tfs.parse_predict(body, entry.input_names, entry.name,
                                                entry.bool_input_names)
            return fmt, to_arrays(columns, entry.input_specs, entry.name, entry.max_rows)
        fmt, arrays = await parse(body, parsed)
        outputs = await unless_disconnected(request, service.infer(entry, arrays))
        return Response(tfs.predict_response(fmt, entry.output_names, outputs), media_type=JSON)

    def status(name: str | None, version: str | None, sub: str | None) -> Response:
        if not name:
            raise RequestError(400, "Missing model name in request.")
        entry = lookup(name, version)
        if sub == "metadata":
            inputs = {spec.name: spec for spec in entry.input_specs}
            outputs = dict(zip(entry.output_names, entry.model.outputs))
            return Response(tfs.metadata_response(entry.name, entry.version, inputs, outputs),
                            media_type=JSON)
        return Response(tfs.status_response(entry.version, service.problem), media_type=JSON)

    async def v1(request: Request) -> Response:
        path = request.url.path
        found = tfs.PREDICT_PATH.fullmatch(path)
        if request.method == "POST" and found:
            request.state.model = found.group(1)
            return await predict(request, *found.groups())
        found = tfs.STATUS_PATH.fullmatch(path)
        if request.method != "GET" or not found:
            raise RequestError(400, f"Malformed request: {request.method} {path}")
        request.state.model = found.group(1)
        return status(*found.groups())

    return [Route("/v1/{rest:path}", endpoint(service, metrics, v1), methods=["GET", "POST"])]


def build_app(service: Service, metrics: ServingMetrics, *, max_body_bytes: int,
              lifecycle=None) -> Starlette:
    """The app serving `service`'s models. `lifecycle` (lifecycle.py) is started with the app
    and stopped after uvicorn has answered the requests in flight."""

    async def prometheus(request: Request) -> Response:
        # The figures kept by the batchers (metrics.py): a scrape never waits for the GPU.
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    async def http_error(request: Request, exc: HTTPException) -> Response:
        return json_error(exc.status_code, str(exc.detail))

    @asynccontextmanager
    async def lifespan(app):
        if lifecycle is not None:
            await lifecycle.start()
        yield
        if lifecycle is not None:
            await lifecycle.stop()

    routes = (tf_serving_routes(service, metrics, max_body_bytes=max_body_bytes)
              + open_inference_http.routes(service, metrics, max_body_bytes=max_body_bytes)
              + [Route("/monitoring/prometheus/metrics", prometheus, methods=["GET"])])
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error},
                     lifespan=lifespan)
