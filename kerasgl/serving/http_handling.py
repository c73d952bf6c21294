"""What the HTTP fronts (TF Serving's REST API: app.py; the Open Inference Protocol:
open_inference_http.py) do alike with a request, so that both protocols hold under the same
faults:

- admission before work: a body larger than --max-body-bytes is refused from its Content-Length
  (413), and a model whose queue has no room refuses before a byte of the body is read (503);
- the body parsed off the event loop when large, its nesting bounded (JSON nested deeper than
  Python can recurse is a 400, not a RecursionError);
- the deadline (service.py) over the whole request, reading included;
- a client that disconnects while its request waits has it dropped (499 in the metrics);
- every error as the protocols' JSON ({"error": "..."}), a 500 as "internal error" and a request
  id (failures.py), counted in the metrics by model and status.
"""
from __future__ import annotations

import asyncio
import json
import time

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from .failures import RequestError, internal_error
from .service import within

JSON = "application/json"
CLIENT_CLOSED = 499          # TF Serving's answer to CANCELLED (nginx's "client closed request")
_PARSE_INLINE_BYTES = 256 * 1024     # larger bodies are parsed off the event loop


class Disconnected(Exception):
    """The client went away before its answer."""


def json_error(status: int, message: str) -> Response:
    return Response(json.dumps({"error": message}).encode(), status_code=status, media_type=JSON)


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused (413) from its declared length before any of it is read when larger
    than `limit`, and as soon as it passes `limit` when it declared none."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(413, f"The request body ({declared} bytes) is larger than the "
                                f"server's limit of {limit} bytes (--max-body-bytes).")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise RequestError(413, f"The request body is larger than the server's limit of "
                                        f"{limit} bytes (--max-body-bytes).")
    except ClientDisconnect:
        raise Disconnected() from None
    return bytes(body)


async def parse(body: bytes, parser):
    """parser() (which reads `body`): off the event loop for a large body, so that one request's
    parsing never stalls the others. JSON nested too deep for Python is the request's fault."""
    try:
        if len(body) > _PARSE_INLINE_BYTES:
            return await run_in_threadpool(parser)
        return parser()
    except RecursionError:
        raise RequestError(400, "JSON Parse error: the request nests lists or objects too "
                                "deeply.") from None


async def _until_disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(request: Request, work):
    """Await `work` (once the body has been read), cancelling it if the client disconnects
    first (Disconnected): the batcher drops a request whose caller left."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_until_disconnected(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        if not task.done():      # the client left, or this was cancelled (the deadline passed)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        raise Disconnected()
    return task.result()


def endpoint(service, metrics, handler):
    """A Starlette endpoint around `async handler(request) -> Response`, which names the model
    it serves in request.state.model (for the metrics): the deadline over the whole request,
    and every failure answered in the protocols' JSON shape."""
    async def run(request: Request) -> Response:
        started = time.perf_counter()
        request.state.model = None
        try:
            response = await within(service.deadline(), handler(request))
        except RequestError as exc:
            response = json_error(exc.status, str(exc))
        except Disconnected:
            response = Response(status_code=CLIENT_CLOSED)     # nobody is there to read it
        except Exception as exc:          # a fault of the server's (TF Serving: INTERNAL -> 500)
            response = json_error(500, internal_error(exc, f"{request.method} {request.url.path}"))
        metrics.answered(request.state.model, response.status_code, time.perf_counter() - started)
        return response
    return run
