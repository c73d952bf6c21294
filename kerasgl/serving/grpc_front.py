"""The Open Inference Protocol over gRPC (`--grpc-port`): the service inference.
GRPCInferenceService of protos/grpc_predict_v2.proto, the name under which KServe and Triton
serve it (so tritonclient.grpc and KServe's clients reach it unchanged): ServerLive,
ServerReady, ModelReady, ServerMetadata, ModelMetadata and ModelInfer.

It runs on the same event loop as the HTTP server (grpc.aio) and sends its requests to the same
batchers, so gRPC and HTTP requests merge into the same batches. A request's deadline is the
earlier of the server's (--request-timeout-ms) and the client's gRPC deadline (or the "timeout"
parameter, microseconds, as Triton reads it); past it the answer is DEADLINE_EXCEEDED and a
request not yet started costs no GPU work. Errors carry the gRPC code of their HTTP status
(failures.py): INVALID_ARGUMENT, NOT_FOUND, UNAVAILABLE, ..., INTERNAL with a request id only.
Outputs go back as raw_output_contents (as Triton sends them), those asked for by name or all.

grpcio and protobuf are in the `serve` extra; without them the HTTP fronts still serve and
--grpc-port says what to install.
"""
from __future__ import annotations

import asyncio
import time

from . import open_inference as oip
from .failures import RequestError, internal_error
from .service import Service, within

try:
    import grpc
    from . import protos
except ImportError as exc:           # HTTP-only serving needs neither
    grpc = protos = None
    _MISSING = str(exc)

_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "UNIMPLEMENTED",
          413: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
          503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_CONTENTS = {"BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents",
             "INT32": "int_contents", "INT64": "int64_contents", "UINT8": "uint_contents",
             "UINT16": "uint_contents", "UINT32": "uint_contents", "UINT64": "uint64_contents",
             "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents"}


def _parameter(parameters, key: str):
    if key not in parameters:
        return None
    value = parameters[key]
    return getattr(value, value.WhichOneof("parameter_choice") or "int64_param")


def _tensors(request) -> list:
    """The request's input Tensors: raw_input_contents (one per input, in order) or each
    input's typed contents."""
    raw = list(request.raw_input_contents)
    if raw and len(raw) != len(request.inputs):
        raise RequestError(400, f"The request has {len(request.inputs)} inputs and "
                                f"{len(raw)} raw_input_contents; give one per input, or none.")
    tensors = []
    for i, item in enumerate(request.inputs):
        what = f"Input '{item.name}'"
        if raw:
            data = oip.from_raw(item.datatype, raw[i], what)
        else:
            field = _CONTENTS.get(item.datatype)
            data = list(getattr(item.contents, field)) if field else []
        tensors.append(oip.Tensor(item.name, item.datatype, list(item.shape), data))
    return tensors


class GrpcFront:
    """The service's handlers, bound to `service`; start() listens on host:port."""

    def __init__(self, service: Service, metrics, *, max_message_bytes: int,
                 max_concurrent_rpcs: int | None = None):
        if grpc is None:
            raise ImportError(f"--grpc-port needs grpcio and protobuf ({_MISSING}): "
                              "pip install 'kerasgl[serve]'")
        self.service, self.metrics = service, metrics
        self.port: int | None = None
        methods = protos.methods()
        handlers = {name: grpc.unary_unary_rpc_method_handler(
            self._handler(getattr(self, name)), request_deserializer=request.FromString,
            response_serializer=response.SerializeToString)
            for name, (request, response) in methods.items()}
        self._responses = {name: response for name, (_, response) in methods.items()}
        self._server = grpc.aio.server(
            maximum_concurrent_rpcs=max_concurrent_rpcs,
            options=[("grpc.max_receive_message_length", max_message_bytes),
                     ("grpc.max_send_message_length", -1),
                     ("grpc.so_reuseport", 0)])          # a port in use is an error, not shared
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(protos.SERVICE, handlers),))

    async def start(self, host: str, port: int) -> int:
        """Listen on host:port (0: any free port); the port taken."""
        shown = f"[{host}]" if ":" in host else host
        try:
            self.port = self._server.add_insecure_port(f"{shown}:{port}")
        except RuntimeError as exc:
            raise OSError(f"Cannot listen on {host}:{port} for gRPC: {exc}") from None
        await self._server.start()
        return self.port

    async def stop(self, grace: float) -> None:
        """Refuse new RPCs; those in flight get `grace` seconds to finish."""
        await self._server.stop(grace)

    # -- the handlers ---------------------------------------------------------------------------
    def _handler(self, method):
        """The gRPC handler of `async method(request) -> response`: the request's deadline over
        it, the metrics, and every failure as a gRPC status."""
        async def run(request, context):
            started = time.perf_counter()
            model = getattr(request, "model_name", None) or getattr(request, "name", None)
            status = 200
            try:
                remaining = context.time_remaining()
                timeout = oip.timeout_seconds(_parameter(request.parameters, "timeout")) \
                    if hasattr(request, "parameters") else None
                limits = [t for t in (remaining, timeout) if t is not None]
                return await within(self.service.deadline(min(limits) if limits else None),
                                    method(request))
            except RequestError as exc:
                status, message = exc.status, str(exc)
            except asyncio.CancelledError:       # the client cancelled, or its deadline passed
                status = 499
                raise
            except Exception as exc:
                status, message = 500, internal_error(exc, f"gRPC {method.__name__}")
            finally:
                self.metrics.answered(model, status, time.perf_counter() - started)
            await context.abort(getattr(grpc.StatusCode, _CODES.get(status, "UNKNOWN")), message)
        return run

    async def ServerLive(self, request):
        return self._responses["ServerLive"](live=True)

    async def ServerReady(self, request):
        return self._responses["ServerReady"](ready=self.service.ready)

    async def ModelReady(self, request):
        entry = oip.find(self.service, request.name, request.version)
        return self._responses["ModelReady"](ready=self.service.model_ready(entry))

    async def ServerMetadata(self, request):
        return self._responses["ServerMetadata"](**oip.server_metadata())

    async def ModelMetadata(self, request):
        metadata = oip.model_metadata(oip.find(self.service, request.name, request.version))
        response = self._responses["ModelMetadata"]
        tensor = response.TensorMetadata
        return response(name=metadata["name"], versions=metadata["versions"],
                        platform=metadata["platform"],
                        inputs=[tensor(**t) for t in metadata["inputs"]],
                        outputs=[tensor(**t) for t in metadata["outputs"]])

    async def ModelInfer(self, request):
        entry = oip.find(self.service, request.model_name, request.model_version)
        self.service.admit(entry)
        selected = oip.selected_outputs(entry, [o.name for o in request.outputs])
        outputs = await self.service.infer(entry, oip.input_arrays(entry, _tensors(request)))
        response = self._responses["ModelInfer"](model_name=entry.name,
                                                 model_version=entry.version, id=request.id)
        for index in selected:
            array = outputs[index]
            response.outputs.add(name=entry.output_names[index],
                                 datatype=oip.datatype_of(array.dtype), shape=array.shape)
            response.raw_output_contents.append(oip.to_raw(array))
        return response
