"""The compile-ahead helper's load rule (kerasgl/devices/llvmpipe/compile_ahead.py): under
KERASGL_COMPILE_AHEAD=auto it starts only when a CPU this process may use is idle (/proc/stat
read twice), since on a busy machine it slows the first predict down. Not started for load, the
file is still noted after its first predict. The measured effect: docs/performance.md."""
import os
import subprocess
import sys
import time

from kerasgl.devices.llvmpipe import compile_ahead


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def test_idle_cpus_counts_between_none_and_every_cpu():
    idle = compile_ahead.idle_cpus()
    assert 0.0 <= idle <= cpus() + 1e-6


def test_a_cpu_busy_loop_on_every_cpu_reads_as_no_idle_cpu():
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cpus())]
    try:
        time.sleep(0.5)                   # the loops are running
        assert compile_ahead.idle_cpus(0.3) < compile_ahead.MIN_IDLE_CPUS
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def test_auto_starts_no_helper_without_an_idle_cpu_and_still_notes_the_file(tmp_path,
                                                                            monkeypatch):
    path = tmp_path / "model.keras"
    path.write_bytes(b"a model file, by its path, size and time")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(compile_ahead.ENV, "auto")
    monkeypatch.setattr(compile_ahead, "idle_cpus", lambda: 0.0)
    helper = compile_ahead.maybe_start(path, compile_ahead.MIN_LAYERS)
    assert helper is not None and helper.process is None       # nothing started
    assert helper not in compile_ahead._running
    helper.first_predict_done()                                   # noted all the same
    monkeypatch.setattr(compile_ahead, "idle_cpus", lambda: float(cpus()))
    assert compile_ahead.maybe_start(path, compile_ahead.MIN_LAYERS) is None


def test_forced_on_ignores_the_load(tmp_path, monkeypatch):
    path = tmp_path / "model.keras"
    path.write_bytes(b"not read: the helper is stopped at once")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(compile_ahead.ENV, "1")

    def never():
        raise AssertionError("KERASGL_COMPILE_AHEAD=1 must not look at the load")
    monkeypatch.setattr(compile_ahead, "idle_cpus", never)
    helper = compile_ahead.maybe_start(path, 1)
    try:
        assert helper is not None and helper.process is not None
    finally:
        helper.stop()
