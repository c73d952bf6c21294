"""Compile ahead: on llvmpipe, a helper process compiles a large model's shaders from its last
layer backwards while the first predict compiles them from the first layer forwards.

llvmpipe JIT-compiles each program variant with LLVM at its first dispatch, on the thread that
dispatches, so a cold first predict is mostly compiling (EfficientNetB0: 27 programs, ~10 s on 2
cores) with the second CPU idle. Mesa keeps every compiled variant in its on-disk shader cache,
keyed by the shader and the variant's state, and any process finds it there: a second process
takes ~0.5 s for the same first predict. So load_model starts a helper process that loads the same
file and runs every layer once on zeros of its inferred batch-1 shapes, last layer first; each
program it compiles is a disk-cache hit for the first predict when it gets there, and each the
first predict compiles is one for the helper. Measured on the 2-core CI machine with an empty Mesa
cache, load_model -> first prediction (scripts/bench.py, docs/performance.md): EfficientNetB0
8.6 -> 6.3 s, MobileNetV2 5.4 -> 5.1 s, ResNet50 5.1 -> 3.4 s.

The helper ends when the first predict returns (its work is done or no longer needed), when the
model is disposed, or with this process; it never touches this process's GL objects (it has its
own context) and it cannot change results: it only fills a cache that Mesa checks by content. A
file whose first predict has been made on this device is noted under ~/.cache/kerasgl/ (by path,
size, modification time, device and kerasgl version), and the helper is not started for it again:
with a warm Mesa cache it would only compete for the CPU (+0.1-0.2 s).

The helper only helps when a CPU would otherwise sit idle during the first predict: on a busy
machine it competes with the first predict for the CPUs (MobileNetV2 cold on 2 cores shared with
other work, load average 8-14: 16.0 s with it against 9.4-12.1 s without in earlier pairs; 48 and
59 s with it against 24 and 46 s without in scripts/bench_cold_predict.py, where `auto` did not
start it: 35.5 s). So, last of all, the
CPUs this process may run on are sampled (/proc/stat read twice, IDLE_SAMPLE_S apart; where it
cannot be read, the 1-minute load average against the CPU count), and the helper starts only if
at least MIN_IDLE_CPUS of a CPU sat idle. Not started for load, the file is still noted after
its first predict (the Mesa cache is then warm and a helper would never help it).

Started only when all hold: llvmpipe is the renderer (its device policy asks), Mesa's shader
cache is not disabled, the model has at least MIN_LAYERS layers, the file is not noted,
KERASGL_COMPILE_AHEAD is not 0, and a CPU is idle.
KERASGL_COMPILE_AHEAD=1 starts it whatever the size, the note or the load (the tests use it).
"""
from __future__ import annotations

import atexit
import ctypes
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

from ... import cache_files, settings

ENV = settings.SETTINGS["compile_ahead"].name
# The helper's body loads a model and runs its layers: kerasgl's own top-level work, started by
# module name (`python -m`), so that nothing here imports above the leaves.
CHILD_MODULE = "kerasgl.compile_ahead_child"
MIN_LAYERS = 40
IDLE_SAMPLE_S = 0.05                 # how long the CPUs are watched for idle time
MIN_IDLE_CPUS = 0.8                  # idle CPU time needed (in CPUs) to start the helper
NOTES_FILE = "compiled.json"
MAX_NOTES = 200
_running: list["Helper"] = []
_exit_hook = False                   # whether _stop_all is registered with atexit


def _setting() -> str:
    return settings.get("compile_ahead")       # "auto", "on" or "off"


def _mesa_cache_disabled() -> bool:
    return any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes")
               for name in ("MESA_SHADER_CACHE_DISABLE", "MESA_GLSL_CACHE_DISABLE"))


def _key(path, describe=None) -> str | None:
    """What a note stands for: this file (by path, size and modification time) and what else
    its compiled programs depend on, as `describe()` lists it (load_model: the device, kerasgl's
    version and the kernel choices). None for what is not a file path."""
    try:
        path = os.fspath(path)
        stat = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    described = [os.path.abspath(path), stat.st_size, stat.st_mtime_ns,
                 *(describe() if describe is not None else ())]
    return hashlib.sha1(json.dumps(described, default=str).encode()).hexdigest()


def _note(key: str) -> None:
    """Remember that a first predict of this file ran here (best effort: a cache that cannot be
    written only means the helper runs again next time)."""
    notes = cache_files.read_dict(NOTES_FILE)
    notes[key] = time.time()
    if len(notes) > MAX_NOTES:
        notes = dict(sorted(notes.items(), key=lambda item: item[1])[-MAX_NOTES:])
    cache_files.write_dict(NOTES_FILE, notes)


class Helper:
    """The helper process of one loaded model."""

    def __init__(self, process: subprocess.Popen | None, key: str | None):
        self.process, self.key = process, key

    def first_predict_done(self) -> None:
        """Note the file as compiled here and end the helper."""
        if self.key is not None:
            _note(self.key)
            self.key = None
        self.stop()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
        if self in _running:
            _running.remove(self)

    model_disposed = stop          # the device policy's per-model hooks (devices/policy.py)


def layer_count(spec) -> int:
    """Layers of a model description, those of nested models included."""
    return sum(1 + (layer_count(layer.inner) if layer.inner is not None else 0)
               for layer in spec.layers)


def maybe_start(path, layer_count: int, describe=None) -> Helper | None:
    """Start the helper for a model file about to be loaded, when it is worth it (see above;
    `describe`: as for the note's key). Called on llvmpipe only (LlvmpipePolicy.model_loaded).
    Returns None when not started (its note, if any, is then not needed either)."""
    global _exit_hook
    setting = _setting()
    if setting == "off" or _mesa_cache_disabled():
        return None
    forced = setting == "on"
    if not forced and layer_count < MIN_LAYERS:
        return None
    key = _key(path, describe)
    if key is None or (not forced and key in cache_files.read_dict(NOTES_FILE)):
        return None
    for helper in list(_running):
        if helper.process.poll() is not None:
            helper.stop()              # finished on its own: reap it
        elif not forced:
            return None                # one helper at a time: two would share one spare CPU
    if not forced and idle_cpus() < MIN_IDLE_CPUS:
        # No CPU to spare: the helper would slow the first predict down. Note the file after
        # it all the same (its programs are then in Mesa's cache).
        return Helper(None, key)
    # The helper's own load starts no helper, and it imports this very kerasgl.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))   # the folder holding kerasgl/
    python_path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    environment = dict(os.environ, **{ENV: "0", "PYTHONPATH": python_path})
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", CHILD_MODULE, os.path.abspath(os.fspath(path))],
            env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, close_fds=True)
    except OSError:
        return None
    helper = Helper(process, key)
    _running.append(helper)
    if not _exit_hook:                 # registered with the first helper: none, nothing to stop
        atexit.register(_stop_all)
        _exit_hook = True
    return helper


def _cpu_times() -> dict:
    """CPU number -> (busy, idle) jiffies from /proc/stat, for the CPUs this process may use
    ({} where it cannot be read)."""
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        allowed = None
    found = {}
    try:
        with open("/proc/stat", encoding="ascii") as f:
            for line in f:
                name, *values = line.split()
                if not name.startswith("cpu") or name == "cpu":
                    continue
                cpu = int(name[3:])
                if allowed is None or cpu in allowed:
                    numbers = [int(v) for v in values[:8]]
                    idle = numbers[3] + numbers[4]          # idle + iowait
                    found[cpu] = (sum(numbers) - idle, idle)
    except (OSError, ValueError, IndexError):
        return {}
    return found


def idle_cpus(sample_s: float = IDLE_SAMPLE_S) -> float:
    """How many CPUs' worth of time this process's CPUs spent idle over the last `sample_s`
    (/proc/stat read twice); where /proc/stat cannot be read, the CPUs the 1-minute load average
    leaves over."""
    first = _cpu_times()
    if first:
        time.sleep(sample_s)
        second = _cpu_times()
        idle = 0.0
        for cpu, (busy0, idle0) in first.items():
            busy1, idle1 = second.get(cpu, (busy0, idle0))
            elapsed = (busy1 - busy0) + (idle1 - idle0)
            if elapsed > 0:
                idle += (idle1 - idle0) / elapsed
        if any(second.get(cpu, times) != times for cpu, times in first.items()):
            return idle
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return float(os.cpu_count() or 1)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(0.0, cpus - load)


def _stop_all() -> None:
    for helper in list(_running):
        helper.stop()


# -------------------------------------------------------------------------------------------------
# The helper process (its body: kerasgl/compile_ahead_child.py)
# -------------------------------------------------------------------------------------------------
def die_with_parent() -> None:
    """Linux: be killed when the process that started us ends (prctl PR_SET_PDEATHSIG). The
    helper's first call."""
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(0)          # the parent ended before the prctl took effect
