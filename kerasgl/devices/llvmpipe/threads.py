"""Mesa llvmpipe's compute threads: how many there are, and keeping them on separate CPUs.

llvmpipe (the software GL driver of machines without a GPU) runs every compute dispatch on a pool
of LP_NUM_THREADS worker threads (default: one per CPU, at most 16) and waits for it. Linux places
those workers by itself, and on a 2-core virtual machine it was seen to leave both of them on one
CPU for seconds at a time: ResNet50 took ~175 ms per predict instead of ~122 ms in those spells,
with each worker's CPU time unchanged (they were taking turns on one core). Pinning worker i to
CPU i removed the slow spells (12 of 12 rounds fast, against 5 of 12 slow unpinned).

The workers are found by difference: the threads that appear while the GL context is created,
named like the thread that created it (Mesa's other threads are named: "llvmpipe-N" rasterizer
threads, "<name>:disk$0" shader-cache queue). They are pinned only when exactly LP_NUM_THREADS of
them appear and there are enough CPUs for one each; otherwise nothing is touched.
KERASGL_PIN_THREADS=0 turns pinning off. Linux only (elsewhere nothing happens).
"""
from __future__ import annotations

import os
import threading

from ... import settings
from ..process import thread_names

THREADS_ENV = "LP_NUM_THREADS"
PIN_ENV = settings.SETTINGS["pin_threads"].name
_MAX_THREADS = 16      # Mesa's LP_MAX_THREADS

# (thread id, CPU) of each compute worker pinned by pin_new_workers; placement.py moves
# them for the duration of a call and puts them back on these CPUs.
_workers: tuple[tuple[int, int], ...] = ()


def count() -> int:
    """The thread count llvmpipe uses for compute, as Mesa derives it from the environment
    (0: each dispatch runs on the calling thread). Mesa reads it once, when the context is made."""
    value = os.environ.get(THREADS_ENV, "")
    try:
        threads = int(value)
    except ValueError:
        threads = len(_allowed_cpus()) or os.cpu_count() or 1
    return max(0, min(threads, _MAX_THREADS))


def pinning_wanted() -> bool:
    return settings.get("pin_threads")


def _allowed_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def pin_new_workers(before: dict[int, str]) -> tuple[int, ...]:
    """Pin the compute workers llvmpipe started since `before` (thread_names() taken just before
    the context was created) to one CPU each. Returns the CPUs used, () when nothing was pinned."""
    wanted = count()
    cpus = _allowed_cpus()
    if not pinning_wanted() or wanted < 2 or len(cpus) < wanted:
        return ()
    own_name = thread_names().get(threading.get_native_id())
    workers = sorted(tid for tid, name in thread_names().items()
                     if tid not in before and name == own_name)
    if len(workers) != wanted:
        return ()             # not the threads we expect: leave the driver alone
    global _workers
    used = []
    for tid, cpu in zip(workers, cpus):
        try:
            os.sched_setaffinity(tid, {cpu})
        except OSError:
            break
        used.append((tid, cpu))
    _workers = tuple(used)
    return pinned_cpus()


def pinned_workers() -> tuple[tuple[int, int], ...]:
    """(thread id, home CPU) of the workers pinned when the context was made (() if none)."""
    return _workers


def pinned_cpus() -> tuple[int, ...]:
    """The CPUs the workers were pinned to (() if none)."""
    return tuple(cpu for _, cpu in _workers)
