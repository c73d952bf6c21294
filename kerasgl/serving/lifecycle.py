"""The running server's life beside uvicorn's, on its event loop: the batchers and the gRPC front
started with the app, the GPU watchdog, and a stop that never takes longer than
--drain-timeout-s.

- Stopping (SIGTERM / SIGINT, through uvicorn; or the watchdog): the server stops taking requests,
  answers those in flight, closes the batchers, disposes the models and closes the worker (every
  GL object released). A hard deadline guards it all: if the process is still stopping
  --drain-timeout-s after it began (a GPU job that never returns keeps the worker, and so the
  stop, waiting), it ends there and then, by the signal (SIGTERM) or with the watchdog's status.
- The watchdog: a GPU job running longer than --gpu-watchdog-s is taken for a hung driver. The
  models are made unavailable (requests waiting and new ones: 503; readiness and model status
  say so), the job's own requests are answered if it ends within --drain-timeout-s, and the
  process exits with EXIT_GPU_STUCK, for its supervisor to start a fresh one: a hung GL context
  cannot be recovered from inside the process.
"""
from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading

from starlette.concurrency import run_in_threadpool

from .grpc_front import GrpcFront

EXIT_GPU_STUCK = 75          # sysexits' EX_TEMPFAIL: try again (uvicorn itself exits 3)
_KERNEL_GRACE_S = 0.5


class Lifecycle:
    def __init__(self, service, worker, metrics, config, announce=print):
        self.service, self.worker, self.metrics = service, worker, metrics
        self.config, self.announce = config, announce
        self.exit_status = 0
        self.failed: BaseException | None = None     # why start() failed, for serve() to raise
        self.request_exit = None                     # set by server.py: ask uvicorn to stop
        self.grpc: GrpcFront | None = None
        self._grpc_stopping: asyncio.Future | None = None
        self._watchdog: asyncio.Task | None = None
        self._hard_deadline: threading.Timer | None = None

    # -- starting -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the batchers, the gRPC front and the watchdog; announce where the server is.
        A failure (the gRPC port taken) stops the server at once and is kept in `failed`, for
        serve() to report as one line."""
        config = self.config
        for entry in self.service.served.values():
            entry.batcher.start()
            self.metrics.watch_queue(entry.name, entry.batcher)
        if config.grpc_port is not None:
            try:
                self.grpc = GrpcFront(self.service, self.metrics,
                                      max_message_bytes=config.max_body_bytes,
                                      max_concurrent_rpcs=config.max_connections)
                await self.grpc.start(config.host, config.grpc_port)
            except (OSError, ImportError) as exc:
                self.grpc, self.failed = None, exc
                self.request_exit()
                return
        if config.gpu_watchdog_s:
            self._watchdog = asyncio.ensure_future(self._watch(config.gpu_watchdog_s))
        self.announce(self._started_line(), flush=True)

    def _started_line(self) -> str:
        config, host = self.config, self.config.host
        shown = f"[{host}]" if ":" in host else host
        where = f"http://{shown}:{config.port}"
        if self.grpc is not None:
            where += f" and grpc://{shown}:{self.grpc.port}"
        batching = (f"batches of up to {config.max_batch_size} within "
                    f"{config.batch_timeout_ms:g} ms" if config.batching else "no batching")
        return f"kerasgl serve: {', '.join(self.service.served)} on {where} ({batching})"

    # -- the watchdog ---------------------------------------------------------------------------
    async def _watch(self, limit: float) -> None:
        poll = min(0.1, limit / 4)
        while self.worker.busy_seconds() <= limit:
            await asyncio.sleep(poll)
        problem = (f"A GPU job ran for more than {limit:g} s (--gpu-watchdog-s): the models are "
                   "unavailable and the server is exiting, for its supervisor to restart it.")
        print(f"kerasgl serve: {problem}", file=sys.stderr, flush=True)
        self.exit_status = EXIT_GPU_STUCK
        self.service.make_unavailable(problem)
        self.arm_hard_deadline()
        # Answer what can be: the job's own requests, if it ends before the drain's deadline.
        loop = asyncio.get_running_loop()
        ends = loop.time() + self.config.drain_timeout_s
        while self.worker.busy_seconds() > 0 and loop.time() < ends:
            await asyncio.sleep(poll)
        self.request_exit()

    # -- stopping -------------------------------------------------------------------------------
    def begin_stop(self) -> None:
        """The server starts stopping (uvicorn's shutdown begins): nothing new is taken, the
        gRPC front drains alongside HTTP, and the hard deadline is armed."""
        self.service.stopping = True
        self.arm_hard_deadline()
        if self.grpc is not None and self._grpc_stopping is None:
            self._grpc_stopping = asyncio.ensure_future(self.grpc.stop(self.drain_grace()))

    def drain_grace(self) -> float:
        """How long requests in flight may take: the drain's time, less a little for closing."""
        drain = self.config.drain_timeout_s
        return max(0.0, drain - min(1.0, drain / 4))

    async def stop(self) -> None:
        """After uvicorn has answered the HTTP requests in flight: the same for gRPC, then the
        batchers closed, the models disposed and the worker closed."""
        self.begin_stop()
        if self._grpc_stopping is not None:
            await self._grpc_stopping
        if self._watchdog is not None:
            self._watchdog.cancel()
        for entry in self.service.served.values():
            await entry.batcher.close()
        await run_in_threadpool(self.release)

    def release(self) -> None:
        """Dispose the models and close the worker (harmless twice)."""
        if self.worker.closed:
            return
        for entry in self.service.served.values():
            entry.model.dispose()
        left = self.worker.close()
        self.announce(f"kerasgl serve: stopped; GL objects left on the GPU: {left}", flush=True)

    def arm_hard_deadline(self) -> None:
        """From now on the process ends within --drain-timeout-s (idempotent)."""
        if self._hard_deadline is not None:
            return
        drain = self.config.drain_timeout_s
        self._hard_deadline = threading.Timer(drain, self._end_now)
        self._hard_deadline.daemon = True
        self._hard_deadline.start()
        # A guard the kernel keeps, should the timer's thread not get to run in time (a driver
        # call holding the interpreter, or the CPUs taken by the GPU's own threads, as with
        # llvmpipe): SIGALRM, which Python leaves at its default action, ends the process.
        signal.setitimer(signal.ITIMER_REAL, drain + _KERNEL_GRACE_S)

    def disarm(self) -> None:
        """The stop finished in time: no hard deadline is left behind."""
        if self._hard_deadline is not None:
            self._hard_deadline.cancel()
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _end_now(self) -> None:
        print(f"kerasgl serve: still stopping after --drain-timeout-s "
              f"({self.config.drain_timeout_s:g} s): ending now, without closing the GPU work",
              file=sys.stderr, flush=True)
        sys.stdout.flush()
        # 128 + SIGTERM: what a shell reports for a process the signal ended (a signal handler
        # can only be reset on the main thread, which may be the one stuck).
        os._exit(self.exit_status or 128 + signal.SIGTERM)
