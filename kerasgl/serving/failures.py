"""How a request fails, the same for every protocol the server speaks: a status (HTTP's number;
the gRPC front maps it to gRPC's codes) and a message for the client.

    400  the request itself: malformed, or inputs the model cannot take (validation.py, or the
         model's own run refusing what the request holds: refused_input)
    404  an unknown model or version              413  a body or request larger than the limits
    499  the client left before its answer        501  a method kerasgl does not serve
    503  no room in the queue, the server stopping, or the models unavailable
    504  the request's deadline passed            500  anything else: a fault of the server's

A 500 tells the client "internal error" and a request id, never the exception: its type and text
(which may hold paths, or other requests' values) go to the server's log under that id.
"""
from __future__ import annotations

import logging
import uuid

from ..errors import GPULimitError, InputTypeError, InputValueError, KerasGLError, ShapeError

log = logging.getLogger("kerasgl.serving")

# What a model's run raises on the values or sizes one request holds (an Embedding index out of
# range, checked on the GPU; a free dimension too short for a kernel, or too large for the GPU):
# the request's fault, not the server's.
INPUT_FAULTS = (ShapeError, InputValueError, InputTypeError, GPULimitError)


class RequestError(KerasGLError):
    """A request the server refuses: `status` says why (see the module docstring), the message
    is what the client is told."""

    status = 400

    def __init__(self, status: int | None, message: str):
        super().__init__(message)
        if status is not None:
            self.status = status


class QueueFull(RequestError):
    """No room for the request in its model's queue (requests, rows or bytes), the server is
    stopping, or its models are unavailable: 503, try again later (or elsewhere)."""

    status = 503

    def __init__(self, message: str):
        super().__init__(None, message)


class DeadlineExceeded(RequestError):
    """The request's deadline (--request-timeout-ms, or the client's own) passed first: 504.
    Its work is dropped if its batch had not started."""

    status = 504

    def __init__(self, message: str):
        super().__init__(None, message)


def refused_input(exc: BaseException, model_name: str, input_names: list) -> RequestError | None:
    """The 400 for a request whose own run (alone: batching.py isolates it) raised `exc`, when
    `exc` is about what the request holds; None when it is a fault of the server's. kerasgl's
    message names the layer and an offending value; this names the model's input(s)."""
    if not isinstance(exc, INPUT_FAULTS):
        return None
    if len(input_names) == 1:
        what = f"Input '{input_names[0]}' of model '{model_name}'"
    else:
        what = f"The inputs {list(input_names)} of model '{model_name}'"
    return RequestError(400, f"{what} holds what the model cannot run: {exc}")


def internal_error(exc: BaseException, what: str) -> str:
    """Log `exc` (with its traceback) under a new request id; the message for the client."""
    request_id = uuid.uuid4().hex[:16]
    log.error("internal error, request id %s: %s", request_id, what, exc_info=exc)
    return f"internal error (request id {request_id}; the server's log has the details)"
