"""The HTTP routes (a Starlette app, served by uvicorn: server.py).

    POST /v1/models/NAME[/versions/N]:predict      TF Serving's predict (tf_serving_format.py)
    GET  /v1/models/NAME[/versions/N]              model status
    GET  /v1/models/NAME[/versions/N]/metadata     signature: inputs, outputs, dtypes, shapes
    GET  /monitoring/prometheus/metrics            Prometheus text format (metrics.py)

A predict request goes: body read (at most max_body_bytes: 413) -> JSON parsed and every input
validated (400) -> queued for its model's batcher (503 when the queue is full) -> answered with
its rows of the batch's outputs. While it waits, the connection is watched: a client that
disconnects has its request dropped from the queue (499 in the metrics, no GPU work). Request
paths are matched with TF Serving's own patterns, and a model is looked up by name among those
served: nothing in a request can name a file.
"""
from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from ..tensors.ownership import memory
from . import tf_serving_format as tfs
from .batching import QueueFull
from .metrics import CONTENT_TYPE_LATEST, ServingMetrics
from .validation import to_arrays

JSON = "application/json"
CLIENT_CLOSED = 499          # TF Serving's answer to CANCELLED (nginx's "client closed request")
_PARSE_INLINE_BYTES = 256 * 1024     # larger bodies are parsed off the event loop
_log = logging.getLogger("kerasgl.serving")


def _json_error(status: int, message: str) -> Response:
    return Response(tfs.error_body(message), status_code=status, media_type=JSON)


class _Disconnected(Exception):
    pass


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise tfs.RequestError(413, f"The request body ({declared} bytes) is larger than the "
                                    f"server's limit of {limit} bytes (--max-body-bytes).")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise tfs.RequestError(413, f"The request body is larger than the server's limit "
                                            f"of {limit} bytes (--max-body-bytes).")
    except ClientDisconnect:
        raise _Disconnected() from None
    return bytes(body)


async def _until_disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _unless_disconnected(request: Request, work):
    """Await `work`, cancelling it if the client disconnects first (_Disconnected)."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_until_disconnected(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        if not task.done():
            task.cancel()              # the batcher drops a request whose future is cancelled
            await asyncio.gather(task, return_exceptions=True)
            raise _Disconnected()
    return task.result()


def build_app(served: dict, worker, metrics: ServingMetrics, *, max_body_bytes: int,
              on_shutdown=None) -> Starlette:
    """The app serving `served` ({name: ServedModel}); `on_shutdown()` runs (on a thread) after
    the batchers have drained, when the server stops."""

    def lookup(name: str, version: str | None):
        entry = served.get(name)
        if entry is None or (version is not None and version != entry.version):
            raise tfs.servable_not_found(name, version)
        return entry

    async def predict(request: Request, name: str, version: str | None, method: str) -> Response:
        entry = lookup(name, version)
        if method != "predict":
            raise tfs.RequestError(501, f"kerasgl serve answers :predict only, not :{method}.")
        body = await _read_body(request, max_body_bytes)

        def parse():
            fmt, columns = tfs.parse_predict(body, entry.input_names, entry.name,
                                                entry.bool_input_names)
            return fmt, to_arrays(columns, entry.input_specs, entry.name, entry.max_rows)
        if len(body) > _PARSE_INLINE_BYTES:
            fmt, arrays = await run_in_threadpool(parse)
        else:
            fmt, arrays = parse()
        try:
            outputs = await _unless_disconnected(
                request, entry.batcher.predict(arrays, arrays[0].shape[0]))
        except QueueFull as exc:
            raise tfs.RequestError(503, str(exc)) from None
        return Response(tfs.predict_response(fmt, entry.output_names, outputs), media_type=JSON)

    def status(name: str | None, version: str | None, sub: str | None) -> Response:
        if not name:
            raise tfs.RequestError(400, "Missing model name in request.")
        entry = lookup(name, version)
        if sub == "metadata":
            inputs = {spec.name: spec for spec in entry.input_specs}
            outputs = dict(zip(entry.output_names, entry.model.outputs))
            return Response(tfs.metadata_response(entry.name, entry.version, inputs, outputs),
                            media_type=JSON)
        return Response(tfs.status_response(entry.version), media_type=JSON)

    async def v1(request: Request) -> Response:
        started = time.perf_counter()
        path, model = request.url.path, None
        try:
            found = tfs.PREDICT_PATH.fullmatch(path)
            if request.method == "POST" and found:
                model = found.group(1)
                response = await predict(request, *found.groups())
            else:
                found = tfs.STATUS_PATH.fullmatch(path)
                if request.method != "GET" or not found:
                    raise tfs.RequestError(400, f"Malformed request: {request.method} {path}")
                model = found.group(1)
                response = status(*found.groups())
        except tfs.RequestError as exc:
            response = _json_error(exc.status, str(exc))
        except _Disconnected:
            response = Response(status_code=CLIENT_CLOSED)     # nobody is there to read it
        except Exception as exc:          # a fault of the server's (TF Serving: INTERNAL -> 500)
            _log.exception("%s %s failed", request.method, path)
            response = _json_error(500, f"{type(exc).__name__}: {exc}")
        metrics.answered(model, response.status_code, time.perf_counter() - started)
        return response

    async def prometheus(request: Request) -> Response:
        held = await asyncio.wrap_future(worker.submit(memory))
        return Response(metrics.render(held), media_type=CONTENT_TYPE_LATEST)

    async def http_error(request: Request, exc: HTTPException) -> Response:
        return _json_error(exc.status_code, str(exc.detail))

    @asynccontextmanager
    async def lifespan(app):
        for entry in served.values():
            entry.batcher.start()
            metrics.watch_queue(entry.name, entry.batcher)
        yield
        # uvicorn has answered every request in flight by now; the queues are empty.
        for entry in served.values():
            await entry.batcher.close()
        if on_shutdown is not None:
            await run_in_threadpool(on_shutdown)

    return Starlette(
        routes=[Route("/v1/{rest:path}", v1, methods=["GET", "POST"]),
                Route("/monitoring/prometheus/metrics", prometheus, methods=["GET"])],
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan)
