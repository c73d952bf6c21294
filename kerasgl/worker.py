"""kg.Worker: one thread that owns the GL context and runs every GPU call, for threaded programs.

An OpenGL context is current on one thread only, and kerasgl's belongs for good to the thread that
first touches it (runtime/context.py). A threaded program (a web server, a thread pool, asyncio's
run_in_executor) therefore hands its GPU work to one thread:

    with kg.Worker() as worker:
        model = kg.load_model("model.keras", worker=worker)     # or worker.load_model(...)
        y = model.predict(x)              # from any thread: runs on the worker, numpy in and out
        future = worker.submit(fn, a, b)  # any function, run on the worker: a Future

The worker is a concurrent.futures.ThreadPoolExecutor of one thread (its only thread lives as long
as the executor), so every job runs on the thread that made the context, one at a time, in the
order submitted. An exception raised by a job reaches the caller unchanged through its Future.
Closing the worker shuts the context down on its thread (kg.shutdown: every GL object freed); the
next kerasgl call, from any thread, makes a fresh context.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from .errors import GLContextError
from .model import load_model
from .runtime import context
from .tensors.ownership import memory
from .tensors.tensor import Tensor


class Worker:
    """The thread that owns kerasgl's GL context; other threads submit their GPU work to it.

    Made while no other thread owns a context (call kg.shutdown() on that thread first, or close
    the worker that owns it): the context is created on the worker's thread at once, so that a
    machine without GL fails here (GLContextError) rather than at the first job."""

    def __init__(self, name: str = "kerasgl-gpu"):
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._closed = False
        # Held while a job is queued and while the worker closes, so that no job can be queued
        # behind the context's shutdown (it would make a fresh context on the exiting thread).
        self._lock = threading.Lock()
        self._thread_id: int | None = None
        self._job_started: float | None = None       # time.monotonic() of the running job
        try:
            self._thread_id = self._executor.submit(self._start).result()
        except BaseException:
            self._executor.shutdown(wait=True)
            self._closed = True
            raise

    @staticmethod
    def _start() -> int:
        if context.has_context():
            # Another thread made it (and may be gone: its context is current nowhere else).
            raise GLContextError(
                "kerasgl's OpenGL context already belongs to another thread, and a kg.Worker must "
                "own it: call kg.shutdown() on that thread (or close the worker that owns it) "
                "before making a Worker.")
        context.get_context()
        return threading.get_ident()

    # -- running work ---------------------------------------------------------------------------
    def submit(self, fn, /, *args, **kwargs) -> Future:
        """Run fn(*args, **kwargs) on the worker's thread; a Future of its result (or exception).
        Raises GLContextError once the worker is closing or closed."""
        with self._lock:
            if self._closed:
                raise GLContextError("This kg.Worker is closed; make a new one.")
            return self._executor.submit(self._timed, fn, args, kwargs)

    def _timed(self, fn, args, kwargs):
        self._job_started = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            self._job_started = None

    def busy_seconds(self) -> float:
        """How long the job running now has run (0.0 when the worker is idle): a job that runs
        far longer than any should is a hung driver, which a watchdog can act on."""
        started = self._job_started
        return 0.0 if started is None else time.monotonic() - started

    def call(self, fn, /, *args, **kwargs):
        """fn(*args, **kwargs) on the worker's thread, waiting for its result. From a job already
        running on the worker it calls fn directly (waiting on its own queue would deadlock)."""
        if self.on_worker_thread():
            return fn(*args, **kwargs)
        return self.submit(fn, *args, **kwargs).result()

    def on_worker_thread(self) -> bool:
        return threading.get_ident() == self._thread_id

    @property
    def thread_id(self) -> int | None:
        """threading.get_ident() of the worker's thread (the context's owner)."""
        return self._thread_id

    @property
    def closed(self) -> bool:
        return self._closed

    # -- models ---------------------------------------------------------------------------------
    def load_model(self, path, storage_dtype="float32",
                   activation_dtype="float32") -> "WorkerModel":
        """kg.load_model on the worker: a model whose predict any thread may call
        (storage_dtype and activation_dtype: load_model's)."""
        return WorkerModel(self, self.call(load_model, path, storage_dtype=storage_dtype,
                                           activation_dtype=activation_dtype))

    def memory(self):
        """kg.memory(), read on the worker (the registry it reads changes under running jobs)."""
        return self.call(memory)

    # -- lifetime -------------------------------------------------------------------------------
    def close(self, wait: bool = True) -> dict | None:
        """Let every job already submitted finish, then shut the context down on the worker's
        thread (kg.shutdown: models, tensors, plans and programs freed) and end the thread.
        Returns kg.shutdown()'s count of what the driver still held (all zero when nothing
        leaked). From the moment close is called every submit raises GLContextError, and no job
        runs after the shutdown. Closing twice is harmless (None the second time).

        wait=False queues the shutdown and returns at once (None): the thread ends once it has
        run. Only that form may be called from one of the worker's own jobs (a garbage
        collection running a finalizer there, say), which cannot wait for itself."""
        if wait and self.on_worker_thread():
            raise GLContextError("A kg.Worker cannot be closed by one of its own jobs (it would "
                                 "wait for itself); close it from another thread, or with "
                                 "close(wait=False).")
        with self._lock:
            if self._closed:
                return None
            self._closed = True
            shutdown = self._executor.submit(context.shutdown)      # the last job ever queued
        self._executor.shutdown(wait=False)
        if not wait:
            return None
        try:
            return shutdown.result()
        finally:
            self._executor.shutdown(wait=True)

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False

    def __repr__(self) -> str:
        return f"<kerasgl.Worker thread {self._thread_id}{' (closed)' if self._closed else ''}>"


class WorkerModel:
    """A kerasgl Model living on a Worker: predict (and the rest) from any thread, numpy in and
    out. Description attributes (name, inputs, outputs, shapes) are read directly: they are plain
    Python values fixed at load."""

    def __init__(self, worker: Worker, model):
        self._worker, self._model = worker, model

    @property
    def worker(self) -> Worker:
        return self._worker

    # -- description (no GPU involved) ----------------------------------------------------------
    @property
    def name(self) -> str:
        return self._model.name

    @property
    def source(self) -> str:
        return self._model.source

    @property
    def storage_dtype(self) -> str:
        return self._model.storage_dtype

    @property
    def activation_dtype(self) -> str:
        """Model.activation_dtype: how predict keeps the tensors between layers ("float32" or
        "float16"); setting it (on the worker) frees the plans recorded the other way."""
        return self._model.activation_dtype

    @activation_dtype.setter
    def activation_dtype(self, value) -> None:
        self._worker.call(setattr, self._model, "activation_dtype", value)

    @property
    def inputs(self):
        return self._model.inputs

    @property
    def outputs(self):
        return self._model.outputs

    @property
    def input_shape(self):
        return self._model.input_shape

    @property
    def output_shape(self):
        return self._model.output_shape

    @property
    def is_disposed(self) -> bool:
        return self._model.is_disposed

    @property
    def input_names(self) -> list[str]:
        return [spec.name for spec in self._model.inputs]

    @property
    def output_names(self) -> list[str]:
        """The outputs' names as predict's answers would name them: the keys of a model built
        with dict outputs, else the output layers' names (output_0, output_1, ... where two
        share one)."""
        return self._model.output_names

    # -- GPU work, on the worker ----------------------------------------------------------------
    def predict(self, x, batch_size: int | None = None, verbose=0, outputs=None):
        """Model.predict run on the worker (thread-safe; calls from many threads run one after the
        other). numpy arrays in (or lists, dicts of them), numpy arrays out."""
        _refuse_tensors(x)
        return self._worker.call(self._model.predict, x, batch_size=batch_size, verbose=verbose,
                                 outputs=outputs)

    def warm_up(self, batch_size: int = 1, max_calls: int = 12):
        return self._worker.call(self._model.warm_up, batch_size, max_calls)

    def plan_info(self):
        return self._worker.call(self._model.plan_info)

    @property
    def plan_cache_size(self) -> int:
        """Model.plan_cache_size: the input shapes whose execution plans the model keeps."""
        return self._model.plan_cache_size

    @plan_cache_size.setter
    def plan_cache_size(self, value: int) -> None:
        self._worker.call(setattr, self._model, "plan_cache_size", value)

    def summary(self, print_fn=None, expand_nested: bool = False, line_length: int | None = None):
        lines = []
        self._worker.call(self._model.summary, print_fn=lines.append, expand_nested=expand_nested,
                          line_length=line_length)
        for text in lines:
            (print_fn or print)(text)

    def count_params(self) -> int:
        return self._model.count_params()

    def dispose(self) -> None:
        """Free the model's weights (on the worker). Harmless twice, and after the worker closed
        (closing disposed it)."""
        if self._model.is_disposed or self._worker.closed:
            return
        self._worker.call(self._model.dispose)

    def __enter__(self) -> "WorkerModel":
        return self

    def __exit__(self, exc_type, exc, tb):
        self.dispose()
        return False

    def __repr__(self) -> str:
        return f"<kerasgl.WorkerModel '{self.name}' on {self._worker!r}>"


def _refuse_tensors(x) -> None:
    values = x.values() if isinstance(x, dict) else x if isinstance(x, (list, tuple)) else [x]
    if any(isinstance(v, Tensor) for v in values):
        raise TypeError("A WorkerModel's predict takes numpy arrays (kerasgl Tensors belong to the "
                        "worker's thread): run Tensor code on the worker with worker.submit().")
