"""`kerasgl serve`: check the options, load the models on a kg.Worker, warm them up, listen, serve
with uvicorn (and gRPC beside it, lifecycle.py).

    kerasgl serve model.keras [--model-name NAME] [--port 8501] [--host 127.0.0.1]
        [--grpc-port N] [--max-batch-size 32] [--batch-timeout-ms 2] [--max-queue 256] ...
    kerasgl serve --model digits=digits.keras --model mobilenet=mobilenet.keras

It binds 127.0.0.1 unless --host says otherwise, and prints one line once it accepts connections
("kerasgl serve: ... on http://HOST:PORT"; --port 0 picks a free port and the line tells which,
as it does the gRPC port). SIGTERM or SIGINT: new connections are refused, the requests in
flight are answered, the models are disposed and the GL context shut down, all within
--drain-timeout-s, and the process ends by the signal (uvicorn's way); after the GPU watchdog
fires it exits with lifecycle.EXIT_GPU_STUCK. uvicorn, starlette, prometheus_client, grpcio and
protobuf are the `serve` extra (pip install 'kerasgl[serve]'): kerasgl imports this package only
for the command.
"""
from __future__ import annotations

import argparse
import dataclasses
import socket
import sys

import uvicorn

from ..errors import KerasGLError
from ..worker import Worker
from . import models
from .app import build_app
from .lifecycle import Lifecycle
from .metrics import ServingMetrics
from .options import ServeConfig, ServeSetupError, add_arguments, check, config_from_args
from .service import Service

__all__ = ["ServeConfig", "ServeSetupError", "serve", "main"]


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
    # without it each answer (headers, then body) waits out the client's delayed ACK (~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeSetupError(f"Cannot listen on {host}:{port}: {exc}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, telling the lifecycle when a signal comes (the drain's hard deadline
    counts from it) and when it starts stopping (gRPC drains alongside HTTP)."""

    def __init__(self, config: uvicorn.Config, lifecycle: Lifecycle):
        super().__init__(config)
        self.lifecycle = lifecycle

    def handle_exit(self, sig, frame):
        self.lifecycle.arm_hard_deadline()
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets=None):
        self.lifecycle.begin_stop()
        await super().shutdown(sockets=sockets)


def serve(config: ServeConfig, announce=print) -> int:
    """Run the server until SIGTERM / SIGINT (see the module docstring); the exit status."""
    check(config)                   # before any GL context or model: a bad option costs nothing

    worker = Worker()
    metrics = ServingMetrics(config.models, config.max_batch_size)
    try:
        served = models.load(worker, config.models, batching=config.batching,
                             on_batch=metrics.batch_ran,
                             after_batch=lambda: metrics.gpu_memory(worker.memory()),
                             storage_dtype=config.storage_dtype,
                             activation_dtype=config.activation_dtype,
                             **config.batcher_options())
        if config.warm_up:
            for entry in served.values():
                models.warm_up(entry)
        metrics.gpu_memory(worker.memory())
        sock = _listen(config.host, config.port)
    except BaseException:
        worker.close()
        raise

    service = Service(served, request_timeout_s=config.request_timeout_ms / 1000)
    config = dataclasses.replace(config, port=sock.getsockname()[1])     # --port 0: the one taken
    lifecycle = Lifecycle(service, worker, metrics, config, announce)
    app = build_app(service, metrics, max_body_bytes=config.max_body_bytes, lifecycle=lifecycle)
    settings = dict(lifespan="on", log_level="warning", access_log=False, loop="asyncio",
                    limit_concurrency=config.max_connections,
                    timeout_graceful_shutdown=lifecycle.drain_grace())
    settings.update(config.extra)
    server = _Uvicorn(uvicorn.Config(app, **settings), lifecycle)
    lifecycle.request_exit = lambda: setattr(server, "should_exit", True)
    try:
        server.run(sockets=[sock])
    finally:
        lifecycle.release()         # when uvicorn failed before its lifespan's shutdown ran
        lifecycle.disarm()
        sock.close()
    if lifecycle.failed is not None:
        raise ServeSetupError(f"The server could not start: {lifecycle.failed}")
    return lifecycle.exit_status


def run_from_args(args) -> int:
    return serve(config_from_args(args))


def main(argv=None) -> int:
    """`kerasgl serve ...` (cli.py hands the arguments after `serve` here)."""
    parser = argparse.ArgumentParser(
        prog="kerasgl serve",
        description="Serve Keras models over TensorFlow Serving's REST API (POST "
                    "/v1/models/NAME:predict) and the Open Inference Protocol (/v2, and gRPC "
                    "with --grpc-port), with dynamic batching.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args)
    except KerasGLError as exc:
        print(f"kerasgl serve: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
