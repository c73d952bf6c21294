"""`kerasgl serve`'s options: the command line, ServeConfig, and every check made on them before
the server makes a GL context or loads a model (so a bad option costs nothing, and nothing loaded
for it is left behind).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..errors import KerasGLError
from .batching import checked_options

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_QUEUE_BYTES = 256 * 1024 * 1024
STORAGE_DTYPES = ("float32", "float16")   # load_model's storage_dtype (docs/float16.md)
ACTIVATION_DTYPES = ("float32", "float16")  # load_model's activation_dtype (docs/float16.md)
_NAME = re.compile(r"[^/:\s]+")          # what TF Serving's path pattern lets a model name hold


class ServeSetupError(KerasGLError):
    """The server cannot start: a bad option, a missing model file, a port in use."""


@dataclass
class ServeConfig:
    models: dict                               # name -> model file path
    host: str = "127.0.0.1"
    port: int = 8501
    grpc_port: int | None = None               # the Open Inference Protocol's gRPC; None: off
    batching: bool = True
    max_batch_size: int = 32
    batch_timeout_ms: float = 2.0
    max_queue: int = 256
    max_queue_rows: int | None = None          # default: max_queue full batches
    max_queue_bytes: int | None = DEFAULT_MAX_QUEUE_BYTES
    allowed_batch_sizes: tuple | None = None   # default: batching.default_allowed_sizes
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_connections: int = 1024                # uvicorn's limit_concurrency; gRPC's RPCs
    request_timeout_ms: float = 30000.0        # 0: no deadline of the server's
    gpu_watchdog_s: float = 300.0              # 0: no watchdog
    warm_up: bool = True
    drain_timeout_s: float = 30.0
    storage_dtype: str = "float32"             # every model's load_model storage_dtype
    activation_dtype: str = "float32"          # every model's load_model activation_dtype
    extra: dict = field(default_factory=dict)  # uvicorn.Config overrides (tests, benchmarks)

    def batcher_options(self) -> dict:
        """The Batcher's keyword arguments (models.load)."""
        return dict(max_batch_size=self.max_batch_size,
                    batch_timeout_s=self.batch_timeout_ms / 1000, max_queue=self.max_queue,
                    max_queue_rows=self.max_queue_rows, max_queue_bytes=self.max_queue_bytes,
                    allowed_batch_sizes=self.allowed_batch_sizes)


def add_arguments(parser) -> None:
    """The `serve` subcommand's options (cli.py)."""
    add = parser.add_argument
    add("path", nargs="?", help="a model file to serve (.keras or .h5)")
    add("--model-name", help="the name requests use for PATH (default: the file's name without "
                             "its extension)")
    add("--model", action="append", default=[], metavar="NAME=PATH",
        help="serve the model file PATH as NAME (repeatable)")
    add("--host", default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only)")
    add("--port", type=int, default=8501, help="HTTP port (default 8501; 0: any free)")
    add("--grpc-port", type=int, default=None,
        help="also serve the Open Inference Protocol over gRPC on this port (0: any free)")
    add("--max-batch-size", type=int, default=32,
        help="most examples merged into one GPU run, and in one request (default 32)")
    add("--batch-timeout-ms", type=float, default=2.0,
        help="how long a batch waits for more requests (default 2 ms)")
    add("--max-queue", type=int, default=256,
        help="requests that may wait per model; more are refused with 503")
    add("--max-queue-rows", type=int, default=None,
        help="examples that may wait per model (default: --max-queue full batches)")
    add("--max-queue-bytes", type=int, default=DEFAULT_MAX_QUEUE_BYTES,
        help="bytes of inputs that may wait per model (default 256 MiB)")
    add("--allowed-batch-sizes", default=None, metavar="N,N,...",
        help="batch sizes runs are padded to (the last must be --max-batch-size; default the "
             "powers of two up to it)")
    add("--no-batching", action="store_true", help="run every request alone, as it comes")
    add("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES,
        help="largest request body; larger ones get 413 (default 64 MiB)")
    add("--max-connections", type=int, default=1024,
        help="HTTP connections (and gRPC calls) served at once; more get 503 (default 1024)")
    add("--request-timeout-ms", type=float, default=30000.0,
        help="each request's deadline from its arrival: 504 past it (default 30000; 0: none)")
    add("--gpu-watchdog-s", type=float, default=300.0,
        help="a GPU job running longer makes the models unavailable and the server exit "
             "non-zero, for its supervisor to restart it (default 300; 0: no watchdog)")
    add("--no-warm-up", action="store_true",
        help="skip compiling every batch size's plan before listening")
    add("--drain-timeout-s", type=float, default=30.0,
        help="on SIGTERM, the most the server takes to stop: requests in flight are answered "
             "within it (default 30)")
    add("--storage-dtype", default="float32", choices=STORAGE_DTYPES,
        help="how every served model's large weight matrices are stored on the GPU: float16 "
             "halves their memory, results move slightly (default float32; docs/float16.md)")
    add("--activation-dtype", default="float32", choices=ACTIVATION_DTYPES,
        help="how every served model keeps the tensors between its layers: float16 halves "
             "their memory and traffic, results move slightly (default float32; "
             "docs/float16.md)")


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
    return ServeConfig(
        models=models, host=args.host, port=args.port, grpc_port=args.grpc_port,
        batching=not args.no_batching, max_batch_size=args.max_batch_size,
        batch_timeout_ms=args.batch_timeout_ms, max_queue=args.max_queue,
        max_queue_rows=args.max_queue_rows, max_queue_bytes=args.max_queue_bytes,
        allowed_batch_sizes=allowed, max_body_bytes=args.max_body_bytes,
        max_connections=args.max_connections, request_timeout_ms=args.request_timeout_ms,
        gpu_watchdog_s=args.gpu_watchdog_s, warm_up=not args.no_warm_up,
        drain_timeout_s=args.drain_timeout_s, storage_dtype=args.storage_dtype,
        activation_dtype=args.activation_dtype)


def check(config: ServeConfig) -> None:
    """Every option and model path checked (ServeSetupError), before anything is loaded."""
    for name, path in config.models.items():
        if not _NAME.fullmatch(name):
            raise ServeSetupError(f"Model name {name!r} may not hold '/', ':' or blanks (it is "
                                  "part of the request path).")
        if not os.path.isfile(path):
            raise ServeSetupError(f"Model file {path!r} (model {name!r}) does not exist.")
    if config.storage_dtype not in STORAGE_DTYPES:
        raise ServeSetupError(f"--storage-dtype takes {' or '.join(STORAGE_DTYPES)}, got "
                              f"{config.storage_dtype!r}.")
    if config.activation_dtype not in ACTIVATION_DTYPES:
        raise ServeSetupError(f"--activation-dtype takes {' or '.join(ACTIVATION_DTYPES)}, got "
                              f"{config.activation_dtype!r}.")
    if config.max_body_bytes < 1 or config.max_connections < 1:
        raise ServeSetupError("--max-body-bytes and --max-connections must be positive.")
    if min(config.request_timeout_ms, config.gpu_watchdog_s, config.drain_timeout_s) < 0:
        raise ServeSetupError("--request-timeout-ms, --gpu-watchdog-s and --drain-timeout-s "
                              "must not be negative.")
    try:
        checked_options(**config.batcher_options())
    except ValueError as exc:
        raise ServeSetupError(f"{exc} (--max-batch-size, --batch-timeout-ms, --max-queue, "
                              "--max-queue-rows, --max-queue-bytes, --allowed-batch-sizes)") from None
