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

Started only when all hold: llvmpipe is the renderer, Mesa's shader cache is not disabled, the
model has at least MIN_LAYERS layers, the file is not noted, and KERASGL_COMPILE_AHEAD is not 0.
KERASGL_COMPILE_AHEAD=1 starts it whatever the size or the note (the tests use it).
"""
from __future__ import annotations

import atexit
import ctypes
import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

from ... import cache_files

ENV = "KERASGL_COMPILE_AHEAD"
_HELPER_COMMAND = "import sys; from kerasgl.devices.llvmpipe.compile_ahead import helper_main; helper_main(sys.argv[1])"
MIN_LAYERS = 40
NOTES_FILE = "compiled.json"
MAX_NOTES = 200
_running: list["Helper"] = []


def _setting() -> str:
    return os.environ.get(ENV, "auto").strip().lower()


def _mesa_cache_disabled() -> bool:
    return any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes")
               for name in ("MESA_SHADER_CACHE_DISABLE", "MESA_GLSL_CACHE_DISABLE"))


def _key(path) -> str | None:
    """What a note stands for: this file (by path, size and modification time) on this device
    with this version of kerasgl and these kernel choices. None for what is not a file path."""
    from ... import __version__
    from ...runtime import tuning
    try:
        path = os.fspath(path)
        stat = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    described = [os.path.abspath(path), stat.st_size, stat.st_mtime_ns, tuning.device_key(),
                 __version__, dataclasses.astuple(tuning.current())]
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


def layer_count(spec) -> int:
    """Layers of a model description, those of nested models included."""
    return sum(1 + (layer_count(layer.inner) if layer.inner is not None else 0)
               for layer in spec.layers)


def maybe_start(path, layer_count: int) -> Helper | None:
    """Start the helper for a model file about to be loaded, when it is worth it (see above).
    Returns None when not started (its note, if any, is then not needed either)."""
    setting = _setting()
    if setting in ("0", "false", "no", "off"):
        return None
    from ...runtime import context
    if "llvmpipe" not in context.info().renderer.lower() or _mesa_cache_disabled():
        return None
    forced = setting in ("1", "true", "yes", "on")
    if not forced and layer_count < MIN_LAYERS:
        return None
    key = _key(path)
    if key is None or (not forced and key in cache_files.read_dict(NOTES_FILE)):
        return None
    for helper in list(_running):
        if helper.process.poll() is not None:
            helper.stop()              # finished on its own: reap it
        elif not forced:
            return None                # one helper at a time: two would share one spare CPU
    # The helper's own load starts no helper, and it imports this very kerasgl.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))   # the folder holding kerasgl/
    python_path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    environment = dict(os.environ, **{ENV: "0", "PYTHONPATH": python_path})
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", _HELPER_COMMAND, os.path.abspath(os.fspath(path))],
            env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, close_fds=True)
    except OSError:
        return None
    helper = Helper(process, key)
    _running.append(helper)
    return helper


@atexit.register
def _stop_all() -> None:
    for helper in list(_running):
        helper.stop()


# -------------------------------------------------------------------------------------------------
# The helper process
# -------------------------------------------------------------------------------------------------
def _die_with_parent() -> None:
    """Linux: be killed when the process that started us ends (prctl PR_SET_PDEATHSIG)."""
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(0)          # the parent ended before the prctl took effect


def compile_backwards(path: str) -> int:
    """Load the model and run each of its layers once on zeros of its batch-1 input shapes, last
    layer first. Returns the number of layers run (a layer that refuses zeros is skipped)."""
    import numpy as np

    import kerasgl as kg
    from ...compiler.graph import map_refs
    model = kg.load_model(path)
    input_dtypes = dict(zip(model._graph.input_refs, (s.dtype for s in model.inputs)))
    done = 0
    for graph, node in _backwards(model._graph):
        def zeros(ref, graph=graph):
            shape = tuple(1 if d is None else d for d in graph.shapes[ref])
            return kg.tensor(np.zeros(shape, input_dtypes.get(ref, "float32")))
        try:
            with kg.tidy():
                node.layer.call(*map_refs(node.args, zeros), **map_refs(node.kwargs, zeros))
            done += 1
        except Exception:       # noqa: BLE001 - a warm-up only: the real predict reports errors
            continue
    model.dispose()
    return done


def _backwards(graph):
    """(graph, node) for every layer call, last first, models nested as layers entered (their
    own layers last first too)."""
    from ...compiler.graph import NestedModel
    for node in reversed(graph.needed_nodes(list(graph.output_refs))):
        if isinstance(node.layer, NestedModel):
            yield from _backwards(node.layer.graph)
        else:
            yield graph, node


def helper_main(path: str) -> None:
    """The helper process's body (started by maybe_start)."""
    _die_with_parent()
    compile_backwards(path)
