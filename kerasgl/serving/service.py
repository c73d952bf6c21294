"""What every front of the server (TF Serving's REST API, the Open Inference Protocol over HTTP
and over gRPC) asks of it, answered in one place: which models are served, whether they are
available, how long a request may take, and a request's outputs from its model's batcher.

A request's deadline is the earlier of the server's (--request-timeout-ms, from its arrival) and
the client's own where its protocol carries one (a gRPC deadline; the Open Inference Protocol's
"timeout" parameter, as Triton reads it). When it passes the request is answered 504 /
DEADLINE_EXCEEDED, and its work is dropped if its batch has not started.
"""
from __future__ import annotations

import asyncio

from .failures import DeadlineExceeded, QueueFull, refused_input


class Service:
    """The served models ({name: models.ServedModel}) and their state."""

    def __init__(self, served: dict, *, request_timeout_s: float | None = None):
        self.served = served
        self.request_timeout_s = request_timeout_s or None
        self.problem: str | None = None       # why the models are unavailable (lifecycle.py)
        self.stopping = False

    # -- state ----------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Whether requests are taken: every model available and the server not stopping."""
        return self.problem is None and not self.stopping

    def model_ready(self, entry) -> bool:
        return self.ready and entry.model is not None and not entry.model.is_disposed

    def make_unavailable(self, problem: str) -> None:
        """Every model refuses requests from now on (503, naming `problem`), those queued too."""
        self.problem = problem
        for entry in self.served.values():
            entry.batcher.refuse_all(problem)

    def find(self, name: str, version: str | None):
        """The served model `name` (at `version`, when given), or None."""
        entry = self.served.get(name)
        if entry is None or (version not in (None, "") and version != entry.version):
            return None
        return entry

    # -- requests -------------------------------------------------------------------------------
    def deadline(self, client_timeout_s: float | None = None, start: float | None = None):
        """The event loop's time by which a request arriving at `start` (default now) must be
        answered, or None: the server's timeout and the client's, whichever ends first."""
        start = asyncio.get_running_loop().time() if start is None else start
        limits = [t for t in (self.request_timeout_s, client_timeout_s) if t is not None]
        return start + min(limits) if limits else None

    def admit(self, entry) -> None:
        """Raise QueueFull (503) unless `entry`'s queue has room for one more request now: a
        front asks before it reads or parses anything of the request."""
        if self.problem is not None:
            raise QueueFull(self.problem)
        entry.batcher.admit()

    async def infer(self, entry, arrays: list) -> list:
        """The outputs (a list of arrays in output order) for validated inputs. Raises
        RequestError (QueueFull 503, a 400 naming the input whose values the model refused);
        any other exception is a fault of the server's."""
        try:
            return await entry.batcher.predict(arrays, arrays[0].shape[0])
        except Exception as exc:
            refused = refused_input(exc, entry.name, entry.input_names)
            if refused is None:
                raise
            raise refused from None


async def within(deadline: float | None, work):
    """Await `work` (a coroutine) until the loop's time `deadline` (None: no limit); past it the
    work is cancelled (a batcher drops a request not yet started) and DeadlineExceeded raised."""
    if deadline is None:
        return await work
    remaining = deadline - asyncio.get_running_loop().time()
    try:
        return await asyncio.wait_for(work, max(0.0, remaining))
    except asyncio.TimeoutError:
        raise DeadlineExceeded("The request's deadline passed before it was answered "
                               "(--request-timeout-ms, or the client's own).") from None
