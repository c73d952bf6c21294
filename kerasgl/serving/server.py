"""`kerasgl serve`: load the models on a kg.Worker, warm them up, listen, serve with uvicorn.

    kerasgl serve model.keras [--model-name NAME] [--port 8501] [--host 127.0.0.1]
        [--max-batch-size 32] [--batch-timeout-ms 2] [--max-queue 256] [--no-batching] ...
    kerasgl serve --model digits=digits.keras --model mobilenet=mobilenet.keras

It binds 127.0.0.1 unless --host says otherwise, and prints one line once it accepts connections
("kerasgl serve: ... on http://HOST:PORT"; --port 0 picks a free port and the line tells which).
SIGTERM or SIGINT: new connections are refused, the requests in flight are answered (at most
--drain-timeout-s seconds), the models are disposed and the GL context shut down, and the
process ends by the signal (uvicorn's way). uvicorn, starlette and prometheus_client are the
`serve` extra (pip install 'kerasgl[serve]'): kerasgl imports this package only for the command.
"""
from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field

import uvicorn

from ..errors import KerasGLError
from ..worker import Worker
from . import models
from .app import build_app
from .metrics import ServingMetrics

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
_NAME = re.compile(r"[^/:\s]+")          # what TF Serving's path pattern lets a model name hold


class ServeSetupError(KerasGLError):
    """The server cannot start: a bad option, a missing model file, a port in use."""


@dataclass
class ServeConfig:
    models: dict                               # name -> model file path
    host: str = "127.0.0.1"
    port: int = 8501
    batching: bool = True
    max_batch_size: int = 32
    batch_timeout_ms: float = 2.0
    max_queue: int = 256
    allowed_batch_sizes: tuple | None = None   # default: batching.default_allowed_sizes
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    warm_up: bool = True
    drain_timeout_s: int = 30
    extra: dict = field(default_factory=dict)  # uvicorn.Config overrides (tests, benchmarks)


def add_arguments(parser) -> None:
    """The `serve` subcommand's options (cli.py)."""
    parser.add_argument("path", nargs="?", help="a model file to serve (.keras or .h5)")
    parser.add_argument("--model-name", help="the name requests use for PATH (default: the "
                                             "file's name without its extension)")
    parser.add_argument("--model", action="append", default=[], metavar="NAME=PATH",
                        help="serve the model file PATH as NAME (repeatable)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8501, help="port (default 8501; 0: any free)")
    parser.add_argument("--max-batch-size", type=int, default=32,
                        help="most examples merged into one GPU run (default 32)")
    parser.add_argument("--batch-timeout-ms", type=float, default=2.0,
                        help="how long a batch waits for more requests (default 2 ms)")
    parser.add_argument("--max-queue", type=int, default=256,
                        help="requests that may wait per model; more are refused with 503")
    parser.add_argument("--allowed-batch-sizes", default=None, metavar="N,N,...",
                        help="batch sizes runs are padded to (the last must be --max-batch-size; "
                             "default the powers of two up to it)")
    parser.add_argument("--no-batching", action="store_true",
                        help="run every request alone, as it comes")
    parser.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES,
                        help="largest request body; larger ones get 413 (default 64 MiB)")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="skip compiling every batch size's plan before listening")
    parser.add_argument("--drain-timeout-s", type=int, default=30,
                        help="on SIGTERM, how long requests in flight may take to finish")


def config_from_args(args) -> ServeConfig:
    models = {}
    if args.path:
        name = args.model_name or os.path.splitext(os.path.basename(args.path))[0]
        models[name] = args.path
    elif args.model_name:
        raise ServeSetupError("--model-name names the model file PATH; give PATH too.")
    for item in args.model:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ServeSetupError(f"--model takes NAME=PATH, got {item!r}.")
        if name in models:
            raise ServeSetupError(f"Two models are named {name!r}.")
        models[name] = path
    if not models:
        raise ServeSetupError("Give a model file to serve (PATH, or --model NAME=PATH).")
    allowed = None
    if args.allowed_batch_sizes:
        try:
            allowed = tuple(int(v) for v in args.allowed_batch_sizes.split(","))
        except ValueError:
            raise ServeSetupError(f"--allowed-batch-sizes takes integers separated by commas, got "
                                  f"{args.allowed_batch_sizes!r}.") from None
    return ServeConfig(models=models, host=args.host, port=args.port,
                       batching=not args.no_batching, max_batch_size=args.max_batch_size,
                       batch_timeout_ms=args.batch_timeout_ms, max_queue=args.max_queue,
                       allowed_batch_sizes=allowed, max_body_bytes=args.max_body_bytes,
                       warm_up=not args.no_warm_up, drain_timeout_s=args.drain_timeout_s)


def _check(config: ServeConfig) -> None:
    for name, path in config.models.items():
        if not _NAME.fullmatch(name):
            raise ServeSetupError(f"Model name {name!r} may not hold '/', ':' or blanks (it is "
                                  "part of the request path).")
        if not os.path.isfile(path):
            raise ServeSetupError(f"Model file {path!r} (model {name!r}) does not exist.")
    if config.max_batch_size < 1 or config.max_queue < 1 or config.max_body_bytes < 1:
        raise ServeSetupError("--max-batch-size, --max-queue and --max-body-bytes must be "
                              "positive.")
    if config.batch_timeout_ms < 0:
        raise ServeSetupError("--batch-timeout-ms must not be negative.")


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


def serve(config: ServeConfig, announce=print) -> int:
    """Run the server until SIGTERM / SIGINT (see the module docstring)."""
    _check(config)

    worker = Worker()
    metrics = ServingMetrics(config.models, config.max_batch_size)
    try:
        served = models.load(
            worker, config.models, batching=config.batching,
            max_batch_size=config.max_batch_size, batch_timeout_s=config.batch_timeout_ms / 1000,
            max_queue=config.max_queue, allowed_batch_sizes=config.allowed_batch_sizes,
            on_batch=metrics.batch_ran)
        if config.warm_up:
            for entry in served.values():
                models.warm_up(entry)
        sock = _listen(config.host, config.port)
    except BaseException:
        worker.close()
        raise

    def stop() -> None:
        if worker.closed:
            return
        for entry in served.values():
            entry.model.dispose()
        left = worker.close()
        announce(f"kerasgl serve: stopped; GL objects left on the GPU: {left}", flush=True)

    app = build_app(served, worker, metrics, max_body_bytes=config.max_body_bytes,
                    on_shutdown=stop)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    batching = (f"batches of up to {config.max_batch_size} within {config.batch_timeout_ms:g} ms"
                if config.batching else "no batching")
    announce(f"kerasgl serve: {', '.join(served)} on http://{shown}:{port} ({batching})",
             flush=True)
    settings = dict(lifespan="on", log_level="warning", access_log=False,
                    timeout_graceful_shutdown=config.drain_timeout_s)
    settings.update(config.extra)
    server = uvicorn.Server(uvicorn.Config(app, **settings))
    try:
        server.run(sockets=[sock])
    finally:
        stop()             # when uvicorn failed before its lifespan's shutdown ran
        sock.close()
    return 0


def run_from_args(args) -> int:
    return serve(config_from_args(args))

def main(argv=None) -> int:
    """`kerasgl serve ...` (cli.py hands the arguments after `serve` here)."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(
        prog="kerasgl serve", description="Serve Keras models over TensorFlow Serving's REST API "
                                          "(POST /v1/models/NAME:predict), with dynamic batching.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args)
    except KerasGLError as exc:
        print(f"kerasgl serve: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
