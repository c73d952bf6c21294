"""Dynamic batching, as TF Serving's batch scheduler does it: requests for one model that arrive
within `batch_timeout` of the first one waiting are merged into one predict of up to
`max_batch_size` examples, and the outputs are split back, each request getting its rows.

- A batch closes when it is full, or when its timeout has passed and the GPU is free: while the
  previous batch still runs there is nothing to gain by closing, so the batch keeps growing.
- Rows are padded with zeros up to the next of the `allowed_batch_sizes` (TF Serving's option of
  that name; by default the powers of two up to the largest batch, so at most half a batch is
  padding): kerasgl compiles an execution plan per input shape, so a model serving any batch
  size from 1 to 32 would record and compile plans without end. The served model keeps the
  plans of every allowed size (models.py); the padding rows' outputs are dropped.
- Requests merge only with requests whose examples have the same shape (a variable-length input
  may give two requests different ones).
- The queue is bounded in requests (`max_queue`), examples (`max_queue_rows`) and bytes of input
  (`max_queue_bytes`): past any of them a request is refused at once (QueueFull: 503), so
  overload shows as fast refusals rather than ever-growing latency and memory. A front asks
  `admit()` before it reads a request's body, so a full queue costs no reading or parsing.
- A request whose caller gave up (its future cancelled: the client disconnected, or its deadline
  passed) is dropped before its batch runs and costs no GPU work; it stops counting against the
  bounds at once.
- A batch that fails is run again in halves, and so on down to single requests, so only the
  request at fault gets the error (a value checked on the GPU, as an Embedding's index range,
  cannot be checked before the batch runs); the others get their answers.

Every batch runs on the kg.Worker (one GPU, one batch at a time); the asyncio event loop only
gathers and splits.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import numpy as np

from .failures import QueueFull, RequestError

_CLOSE = object()          # queued by close(): the batcher ends when it reaches it


@dataclass(eq=False)
class _Request:
    arrays: list
    rows: int
    nbytes: int
    key: tuple                       # the shape of one example of each input
    future: asyncio.Future
    arrived: float = field(default_factory=time.perf_counter)


def default_allowed_sizes(max_batch_size: int) -> tuple:
    """1, 2, 4, ... up to the largest batch (and it): a batch is padded by less than its own size
    (a batch of 5 runs as 8), and a model keeps log2(max) + 1 plans. Sizes further apart would
    waste more GPU time on zeros: with 1, 8, 32 a batch of 2 ran as 8, and MobileNetV2 served
    fewer requests/s with batching than without."""
    sizes, size = {max_batch_size}, 1
    while size < max_batch_size:
        sizes.add(size)
        size *= 2
    return tuple(sorted(sizes))


def padded_size(rows: int, allowed: tuple) -> int:
    return next((size for size in allowed if size >= rows), rows)


def checked_options(max_batch_size: int, batch_timeout_s: float, max_queue: int,
                    allowed_batch_sizes=None, max_queue_rows=None, max_queue_bytes=None) -> tuple:
    """The allowed batch sizes (sorted; by default default_allowed_sizes), once every option is
    checked (ValueError): the server checks them before it loads any model."""
    if max_batch_size < 1 or max_queue < 1 or batch_timeout_s < 0:
        raise ValueError("max_batch_size and max_queue must be positive, the timeout >= 0.")
    if (max_queue_rows is not None and max_queue_rows < 1) or \
            (max_queue_bytes is not None and max_queue_bytes < 1):
        raise ValueError("The queue's bounds in rows and bytes must be positive.")
    allowed = tuple(sorted(allowed_batch_sizes or default_allowed_sizes(max_batch_size)))
    if allowed[0] < 1 or allowed[-1] != max_batch_size:
        raise ValueError(f"The allowed batch sizes must be positive, the largest max_batch_size "
                         f"({max_batch_size}); got {list(allowed)}.")
    return allowed


class Batcher:
    """The batching queue of one model.

    run(arrays, rows) -> concurrent.futures.Future of the outputs (a list of arrays, `rows` rows
    each): submits one batch to the worker. `batching=False` runs each request alone, in order
    (the queue's bounds still hold, and a request still holds at most max_batch_size examples).
    on_batch(rows, padded_rows) is told of every batch run. The queue's bounds default to
    max_queue full batches of rows, and no bound in bytes."""

    def __init__(self, run, *, max_batch_size: int = 32, batch_timeout_s: float = 0.002,
                 max_queue: int = 256, max_queue_rows: int | None = None,
                 max_queue_bytes: int | None = None, allowed_batch_sizes: tuple | None = None,
                 batching: bool = True, on_batch=None):
        self.allowed_batch_sizes = checked_options(max_batch_size, batch_timeout_s, max_queue,
                                                   allowed_batch_sizes, max_queue_rows,
                                                   max_queue_bytes)
        self._run = run
        self.max_batch_size, self.batch_timeout_s = int(max_batch_size), float(batch_timeout_s)
        self.max_queue, self.batching = int(max_queue), bool(batching)
        self.max_queue_rows = int(max_queue_rows or self.max_queue * self.max_batch_size)
        self.max_queue_bytes = max_queue_bytes
        self._on_batch = on_batch
        self._queue: asyncio.Queue | None = None
        self._carry: list = []               # taken from the queue, left for the next batch
        self._get_task: asyncio.Task | None = None
        self._task: asyncio.Task | None = None
        self._queued: set = set()            # admitted, batch not started (the bounds count them)
        self._waiting_rows = self._waiting_bytes = 0
        self._closing = False
        self._refusal: str | None = None     # why every request is refused (refuse_all)

    @property
    def depth(self) -> int:
        """Requests waiting for their batch to start (the bounded queue's length)."""
        return len(self._queued)

    def admit(self, rows: int = 1, nbytes: int = 0) -> None:
        """Raise QueueFull unless a request of `rows` examples and `nbytes` bytes of input would
        be queued now (a front asks with the defaults before it reads the request's body)."""
        if self._refusal is not None:
            raise QueueFull(self._refusal)
        if self._closing or self._task is None:
            raise QueueFull("The server is shutting down and takes no new requests.")
        if len(self._queued) >= self.max_queue:
            raise QueueFull(f"The batch scheduling queue to which this task was submitted is full "
                            f"({self.max_queue} requests waiting).")
        if self._waiting_rows + rows > self.max_queue_rows:
            raise QueueFull(f"The batch scheduling queue is full: {self._waiting_rows} examples "
                            f"wait, and {rows} more would pass its bound of "
                            f"{self.max_queue_rows} (--max-queue-rows).")
        if self.max_queue_bytes is not None and self._waiting_bytes + nbytes > self.max_queue_bytes:
            raise QueueFull(f"The batch scheduling queue is full: {self._waiting_bytes} bytes of "
                            f"input wait, and {nbytes} more would pass its bound of "
                            f"{self.max_queue_bytes} bytes (--max-queue-bytes).")

    def refuse_all(self, reason: str) -> None:
        """From now on refuse every request with `reason` (QueueFull: 503), those waiting too."""
        self._refusal = reason
        for item in list(self._queued):
            if not item.future.done():
                item.future.set_exception(QueueFull(reason))
            self._release(item)

    def _release(self, item: _Request) -> None:
        """The request stops counting against the queue's bounds (its batch started, or it left)."""
        if item in self._queued:
            self._queued.discard(item)
            self._waiting_rows -= item.rows
            self._waiting_bytes -= item.nbytes

    def start(self) -> None:
        """Start the batching loop on the running event loop."""
        self._queue = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def close(self) -> None:
        """Refuse new requests, run those already queued, then end."""
        if self._task is None:
            return
        self._closing = True
        self._queue.put_nowait(_CLOSE)
        await self._task
        self._task = None

    async def predict(self, arrays: list, rows: int) -> list:
        """The outputs for one validated request (`rows` examples), once its batch has run.
        Raises QueueFull when the queue has no room, RequestError (413) for a request larger
        than the queue's bounds. Cancelling the call (the client went away, its
        deadline passed) drops the request if its batch has not started."""
        nbytes = sum(a.nbytes for a in arrays)
        if rows > self.max_queue_rows:
            raise RequestError(413, f"The request holds {rows} examples, more than the queue "
                                    f"takes ({self.max_queue_rows}, --max-queue-rows).")
        if self.max_queue_bytes is not None and nbytes > self.max_queue_bytes:
            raise RequestError(413, f"The request's inputs hold {nbytes} bytes, more than the "
                                    f"queue takes ({self.max_queue_bytes}, --max-queue-bytes).")
        self.admit(rows, nbytes)
        item = _Request(arrays, rows, nbytes, tuple(a.shape[1:] for a in arrays),
                        asyncio.get_running_loop().create_future())
        self._queued.add(item)
        self._waiting_rows += rows
        self._waiting_bytes += nbytes
        self._queue.put_nowait(item)
        try:
            return await item.future
        except asyncio.CancelledError:
            self._release(item)
            raise

    # -- the loop -------------------------------------------------------------------------------
    def _get(self) -> asyncio.Task:
        """The pending queue.get(), kept across waits so that no item is lost by a timeout."""
        if self._get_task is None:
            self._get_task = asyncio.ensure_future(self._queue.get())
        return self._get_task

    def _take(self):
        item, self._get_task = self._get_task.result(), None
        return item

    def _usable(self, item) -> bool:
        if item is not _CLOSE and item.future.done():
            self._release(item)             # its caller left, or it was refused: no GPU work
            return False
        return True

    async def _first(self):
        while True:
            if self._carry:
                item = self._carry.pop(0)
            else:
                await self._get()
                item = self._take()
            if self._usable(item):
                return None if item is _CLOSE else item

    async def _collect(self, running: asyncio.Future | None) -> list | None:
        first = await self._first()
        if first is None:
            return None
        batch, rows = [first], first.rows
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.batch_timeout_s
        while self.batching and rows < self.max_batch_size:
            busy = running is not None and not running.done()
            remaining = deadline - loop.time()
            if remaining <= 0 and not busy:
                break
            if self._carry:
                break                        # something already waits for the next batch
            waits = {self._get()} | ({running} if busy and remaining <= 0 else set())
            done, _ = await asyncio.wait(waits, timeout=remaining if remaining > 0 else None,
                                         return_when=asyncio.FIRST_COMPLETED)
            if self._get_task is None or self._get_task not in done:
                continue                     # the timeout passed, or the GPU became free
            item = self._take()
            if not self._usable(item):
                continue
            if item is _CLOSE or item.key != first.key or rows + item.rows > self.max_batch_size:
                self._carry.append(item)
                break
            batch.append(item)
            rows += item.rows
        for item in batch:
            self._release(item)
        return batch

    async def _loop(self) -> None:
        running: asyncio.Future | None = None
        try:
            while True:
                batch = await self._collect(running)
                if batch is None:
                    break
                if running is not None:
                    await running            # one batch on the GPU at a time
                running = asyncio.ensure_future(self._run_batch(batch))
            if running is not None:
                await running
        finally:
            if self._get_task is not None:
                self._get_task.cancel()

    async def _run_batch(self, batch: list) -> None:
        """Run the requests still waiting for their answer as one batch; when it fails, run each
        half again (down to single requests), so that only the request at fault gets the error."""
        live = [r for r in batch if not r.future.done()]
        if not live:
            return
        rows = sum(r.rows for r in live)
        padded = padded_size(rows, self.allowed_batch_sizes) if self.batching else rows
        parts = [[r.arrays[i] for r in live] for i in range(len(live[0].arrays))]
        try:
            outputs = await asyncio.wrap_future(self._run(parts, rows, padded))
        except Exception as exc:
            if len(live) > 1:
                half = len(live) // 2
                await self._run_batch(live[:half])
                await self._run_batch(live[half:])
            elif not live[0].future.done():
                live[0].future.set_exception(exc)
            return
        if self._on_batch is not None:
            self._on_batch(rows, padded)
        start = 0
        for r in live:
            if not r.future.done():
                r.future.set_result([o[start:start + r.rows] for o in outputs])
            start += r.rows


def run_on_worker(worker, predict, after=None):
    """The `run` of a Batcher for `predict(inputs) -> list of arrays` (called on the worker):
    the parts of each input joined and padded on the worker's thread, off the event loop.
    after(), when given, runs on the worker after each batch (metrics.py reads the GPU memory
    there, so that a scrape never queues GPU work of its own)."""
    def job(parts, rows, padded):
        inputs = []
        for chunks in parts:
            joined = chunks[0] if len(chunks) == 1 else np.concatenate(chunks)
            if padded > rows:
                joined = np.concatenate([joined, np.zeros((padded - rows, *joined.shape[1:]),
                                                          joined.dtype)])
            inputs.append(joined)
        try:
            return [o[:rows] for o in predict(inputs)]
        finally:
            if after is not None:
                after()

    def run(parts, rows, padded):
        return worker.submit(job, parts, rows, padded)
    return run
