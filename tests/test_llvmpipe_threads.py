"""llvmpipe's compute threads (kerasgl/devices/llvmpipe/threads.py): counted as Mesa counts them, pinned one
per CPU when the context is made, left alone when asked to or when they are not what we expect.
The pinning itself is checked on the live driver, through /proc (no mock of anything)."""
import os
import subprocess
import sys

import pytest

import kerasgl as kg
from kerasgl.devices.llvmpipe import placement as worker_placement, threads as llvmpipe_threads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def on_llvmpipe() -> bool:
    try:
        return "llvmpipe" in kg.info().renderer.lower()
    except kg.GLContextError:      # no GL: conftest.py skips every test (or fails a CI run)
        return False


# The skip conditions are strings, evaluated when each test runs, not at import: collecting this
# module must not touch GL (a machine without it collects the suite and skips it, see conftest.py).
ON_LLVMPIPE_WITH_2_CPUS = "on_llvmpipe() and len(CPUS) >= 2"


@pytest.mark.parametrize("value,expected", [("0", 0), ("3", 3), ("99", 16)])
def test_count_follows_lp_num_threads(monkeypatch, value, expected):
    monkeypatch.setenv("LP_NUM_THREADS", value)
    assert llvmpipe_threads.count() == expected


def test_count_defaults_to_the_cpus_this_process_may_use(monkeypatch):
    monkeypatch.delenv("LP_NUM_THREADS", raising=False)
    assert llvmpipe_threads.count() == min(16, len(CPUS) or os.cpu_count())
    monkeypatch.setenv("LP_NUM_THREADS", "lots")      # Mesa ignores what is not a number
    assert llvmpipe_threads.count() == min(16, len(CPUS) or os.cpu_count())


def test_no_new_threads_means_nothing_is_pinned():
    assert llvmpipe_threads.pin_new_workers(llvmpipe_threads.thread_names()) == ()


@pytest.mark.skipif(f"not ({ON_LLVMPIPE_WITH_2_CPUS}) or os.environ.get('LP_NUM_THREADS') "
                    "or not llvmpipe_threads.pinning_wanted()",
                    reason="llvmpipe with its default threads on 2+ CPUs only (elsewhere nothing "
                           "is pinned; the subprocess test below covers the other settings)")
def test_the_context_pinned_one_worker_per_cpu():
    info = kg.info()
    workers = info.compute_threads
    # A one-group dispatch leaves them huddled on one CPU (worker_placement.py): send them home.
    worker_placement.spread()
    assert info.pinned_cpus == tuple(CPUS[:workers])
    # The driver's threads as /proc shows them: as many single-CPU threads as workers, one per CPU.
    single = sorted(cpu for tid in llvmpipe_threads.thread_names()
                    for cpu in [os.sched_getaffinity(tid)] if len(cpu) == 1)
    assert [next(iter(c)) for c in single] == list(CPUS[:workers])


def info_in_subprocess(**environment) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT, **environment)
    result = subprocess.run([sys.executable, "-m", "kerasgl.cli", "info"], capture_output=True,
                            text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.skipif(f"not ({ON_LLVMPIPE_WITH_2_CPUS})", reason="needs llvmpipe on 2+ CPUs")
def test_pinning_can_be_turned_off_and_is_skipped_when_threads_outnumber_cpus():
    assert "not pinned" in info_in_subprocess(KERASGL_PIN_THREADS="0", LP_NUM_THREADS="")
    assert "not pinned" in info_in_subprocess(LP_NUM_THREADS=str(len(CPUS) + 1))
    pinned = info_in_subprocess(LP_NUM_THREADS="2", KERASGL_PIN_THREADS="1")
    assert f"pinned to CPUs {CPUS[0]}, {CPUS[1]}" in pinned
