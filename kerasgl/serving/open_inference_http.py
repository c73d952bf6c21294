"""The Open Inference Protocol over HTTP (open_inference.py has what it shares with gRPC):

    GET  /v2                                        server metadata
    GET  /v2/health/live, /v2/health/ready          200 when live / ready, else 503
    GET  /v2/models/NAME[/versions/V]               model metadata
    GET  /v2/models/NAME[/versions/V]/ready         200 when the model is ready, else 503
    POST /v2/models/NAME[/versions/V]/infer         inference

An inference request is JSON: {"id"?, "parameters"?, "inputs": [{"name", "datatype", "shape",
"data"}], "outputs"?: [{"name", "parameters"?}]}, answered {"model_name", "model_version", "id"?,
"outputs": [{"name", "datatype", "shape", "data"}]} with only the outputs asked for (all when none
is named). With the binary tensor data extension (what tritonclient uses) the body is the JSON
header, of the length the Inference-Header-Content-Length header gives, followed by the inputs
that carry "parameters": {"binary_data_size": N} instead of "data", N bytes each, in order; an
output is answered the same way when it asks for "binary_data": true (or the request's parameters
say "binary_data_output": true). The request's "timeout" parameter (microseconds) is its own
deadline. Errors are {"error": "..."} with the status codes of failures.py, as for TF Serving's
API: each request goes through the same steps (http_handling.py).
"""
from __future__ import annotations

import json
import re

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import open_inference as oip
from .failures import RequestError
from .http_handling import JSON, endpoint, parse, read_body, unless_disconnected
from .service import Service, within

HEADER_LENGTH = "Inference-Header-Content-Length"
MODEL_PATH = re.compile(r"/v2/models/([^/]+)(?:/versions/([^/]+))?(?:/(ready|infer))?")


def _json(value: dict) -> Response:
    return Response(json.dumps(value).encode(), media_type=JSON)


def _parameters(value, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RequestError(400, f"{where}: \"parameters\" must be an object.")
    return value


def parse_infer(body: bytes, header_length: str | None) -> tuple:
    """(the request's JSON object, its input Tensors with their data) from an infer body."""
    if header_length is not None:
        if not header_length.isdigit() or int(header_length) > len(body):
            raise RequestError(400, f"{HEADER_LENGTH} ({header_length!r:.40}) is not a length "
                                    f"within the body ({len(body)} bytes).")
        header, binary = body[:int(header_length)], memoryview(body)[int(header_length):]
    else:
        header, binary = body, memoryview(b"")
    try:
        request = json.loads(header)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"JSON Parse error: {exc}") from None
    inputs = request.get("inputs") if isinstance(request, dict) else None
    if not isinstance(inputs, list) or not inputs:
        raise RequestError(400, 'The request must be a JSON object whose "inputs" is a '
                                "non-empty list of tensors.")
    tensors, offset = [], 0
    for i, item in enumerate(inputs):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) \
                or not isinstance(item.get("datatype"), str) or "shape" not in item:
            raise RequestError(400, f"Input {i} of the request must be an object with a "
                                    '"name", a "datatype" and a "shape".')
        size = _parameters(item.get("parameters"), f"Input '{item['name']}'").get(
            "binary_data_size")
        if size is None:
            if "data" not in item:
                raise RequestError(400, f"Input '{item['name']}' has neither \"data\" nor "
                                        "binary data.")
            data = item["data"]
        else:
            if not isinstance(size, int) or size < 0 or offset + size > len(binary):
                raise RequestError(400, f"Input '{item['name']}': its binary_data_size "
                                        f"({size!r:.40}) passes the end of the body's binary "
                                        f"data ({len(binary)} bytes).")
            data = oip.from_raw(item["datatype"], binary[offset:offset + size],
                                f"Input '{item['name']}'")
            offset += size
        tensors.append(oip.Tensor(item["name"], item["datatype"], item["shape"], data))
    if offset != len(binary):
        raise RequestError(400, f"The body holds {len(binary)} bytes of binary data; its inputs "
                                f"take {offset}.")
    return request, tensors


def _requested(request: dict) -> tuple:
    """(output names asked for or None, {name: whether binary})."""
    default = bool(_parameters(request.get("parameters"), "The request").get(
        "binary_data_output", False))
    outputs = request.get("outputs")
    if outputs is None:
        return None, {}, default
    if not isinstance(outputs, list) or not all(
            isinstance(o, dict) and isinstance(o.get("name"), str) for o in outputs):
        raise RequestError(400, '"outputs" must be a list of objects with a "name".')
    binary = {o["name"]: bool(_parameters(o.get("parameters"), f"Output '{o['name']}'").get(
        "binary_data", default)) for o in outputs}
    return [o["name"] for o in outputs], binary, default


def infer_response(entry, request: dict, outputs: list) -> Response:
    """The answer to an infer request: JSON, or its header followed by binary outputs."""
    names, binary, default = _requested(request)
    answer = {"model_name": entry.name, "model_version": entry.version, "outputs": []}
    if isinstance(request.get("id"), str):
        answer["id"] = request["id"]
    chunks = []
    for index in oip.selected_outputs(entry, names):
        name, array = entry.output_names[index], outputs[index]
        tensor = {"name": name, "datatype": oip.datatype_of(array.dtype),
                  "shape": list(array.shape)}
        if binary.get(name, default):
            chunks.append(oip.to_raw(array))
            tensor["parameters"] = {"binary_data_size": len(chunks[-1])}
        else:
            tensor["data"] = oip.output_values(array)
        answer["outputs"].append(tensor)
    header = json.dumps(answer).encode()
    if not chunks:
        return Response(header, media_type=JSON)
    return Response(header + b"".join(chunks), media_type="application/octet-stream",
                    headers={HEADER_LENGTH: str(len(header))})


def routes(service: Service, metrics, *, max_body_bytes: int) -> list:
    """The /v2 routes."""

    async def infer(request: Request, entry) -> Response:
        service.admit(entry)
        body = await read_body(request, max_body_bytes)
        header_length = request.headers.get(HEADER_LENGTH)

        def parsed():
            request_json, tensors = parse_infer(body, header_length)
            oip.selected_outputs(entry, _requested(request_json)[0])    # a bad name: 400 now
            return request_json, oip.input_arrays(entry, tensors)
        request_json, arrays = await parse(body, parsed)
        timeout = oip.timeout_seconds(_parameters(request_json.get("parameters"),
                                                  "The request").get("timeout"))
        outputs = await within(service.deadline(timeout),
                               unless_disconnected(request, service.infer(entry, arrays)))
        return infer_response(entry, request_json, outputs)

    def health(ready: bool) -> Response:
        return Response(status_code=200 if ready else 503)

    async def v2(request: Request) -> Response:
        path = request.url.path.rstrip("/")
        if path == "/v2" and request.method == "GET":
            return _json(oip.server_metadata())
        if path in ("/v2/health/live", "/v2/health/ready") and request.method == "GET":
            return health(path.endswith("live") or service.ready)
        found = MODEL_PATH.fullmatch(path)
        if found is None:
            raise RequestError(404, f"Not a path of the Open Inference Protocol: {path}")
        name, version, action = found.groups()
        request.state.model = name
        entry = oip.find(service, name, version)
        if action == "infer" and request.method == "POST":
            return await infer(request, entry)
        if request.method != "GET" or action == "infer":
            raise RequestError(405, f"{request.method} {path} is not served (infer takes POST, "
                                    "the rest GET).")
        if action == "ready":
            return health(service.model_ready(entry))
        return _json(oip.model_metadata(entry))

    return [Route("/v2", endpoint(service, metrics, v2), methods=["GET", "POST"]),
            Route("/v2/{rest:path}", endpoint(service, metrics, v2), methods=["GET", "POST"])]
