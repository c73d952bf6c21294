"""Run the hostile-file corpus in a worker process (tests/fuzz_worker.py) and judge each outcome.

A case passes when kerasgl refused it with a KerasGLError that names the file, or loaded it and
gave the right answer; "right" is decided from what the worker read:
- the graph equals the base's and so do the weights: the base's reference outputs (Keras's);
- the graph equals the base's but some weights changed (the mutation hit weight bytes): the
  base model run with the weights kerasgl read (Keras 3 bases: Keras itself; Keras 2 fixtures:
  kerasgl on the unmutated file's spec, whose answers tests/test_keras2_files.py checks against
  tf-keras). Their shapes must be the base's: the config alone fixes them (a load that takes
  other shapes is the layer code's failure, "wrong_weight_shapes"). Weights the mutation
  made non-finite or beyond 1e4 are only checked for the output shapes (two correct
  implementations may differ there: inf - inf, overflow order);
- the graph changed (a config mutation, or a flipped byte in the JSON): Keras 3 bases are rebuilt
  by Keras from the mutated config (safe mode) and run with the weights kerasgl read; where Keras
  cannot build it, or the base is a Keras 2 fixture, the answer must equal the base's (an inert
  change) or the case is counted as "unverified_config_change" (listed, not failed).
Any case fails on: a raw Python exception, a hang (timeout) or crash of the worker, memory left
on the GPU, a canary opened (audit hook in the worker, inotify here), code from the file run,
a ModelFileError whose message does not name the file, a load of a case that must be refused.
Failures past saving/ (OUTSIDE_SAVING) are counted apart.
"""
from __future__ import annotations

import ctypes
import json
import os
import select
import struct
import subprocess
import sys
import time
from collections import Counter

import numpy as np

from fuzz_worker import PREFIX

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FAILURES = ("code_ran", "read_outside", "plugin_loaded_for_file", "timeout", "crash", "leak",
            "raw_exception", "error_without_path", "loaded_hostile", "wrong_output")
# Failures of the layer code, past saving/ (which hands over the arrays as the file stores
# them): a raw exception raised for a config value it does not check, or a weight of a shape the
# config does not allow taken without complaint. Counted apart, so that the corpus test's message
# says which side of saving/ failed; they fail it like the others.
OUTSIDE_SAVING = ("raw_exception_outside_saving", "wrong_weight_shapes")
PASSES = ("refused", "refused_at_predict", "correct", "correct_changed_weights",
          "correct_changed_config", "loaded_extreme_weights", "unverified_config_change")
ATOL = RTOL = 1e-4


class CanaryWatch:
    """inotify on the canary folder: opens and reads of anything in it (libhdf5 included)."""
    IN_ACCESS, IN_OPEN = 0x1, 0x20

    def __init__(self, directory: str):
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or self._libc.inotify_add_watch(
                self.fd, os.fsencode(directory), self.IN_ACCESS | self.IN_OPEN) < 0:
            raise OSError(ctypes.get_errno(), "inotify on the canary folder")

    def events(self) -> list[str]:
        """Names touched since the last call ("." for the folder itself)."""
        names = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return names
            i = 0
            while i < len(buf):
                _, _, _, length = struct.unpack_from("iIII", buf, i)
                name = buf[i + 16:i + 16 + length].rstrip(b"\0").decode() or "."
                names.append(name)
                i += 16 + length

    def close(self) -> None:
        os.close(self.fd)


class Worker:
    def __init__(self, job_path: str, first: int, cwd: str, plugins: str, log):
        env = dict(os.environ, KERASGL_COMPILE_AHEAD="0", HDF5_PLUGIN_PATH=plugins,
                   PYTHONDONTWRITEBYTECODE="1")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fuzz_worker.py"),
                                      job_path, str(first)], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=log, stdin=subprocess.PIPE)
        self._buf = b""

    def line(self, timeout: float) -> str | None:
        """The next protocol line; None on timeout; "" when the worker is gone."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._buf:
                raw, self._buf = self._buf.split(b"\n", 1)
                text = raw.decode("utf-8", "replace")
                if text.startswith(PREFIX):
                    return text[len(PREFIX):]
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    return ""
                self._buf += chunk

    def go(self) -> None:
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stdin.close()
        return self.proc.returncode


def run(cases, bases, canaries, workdir: str, timeout: float, headroom: int) -> list[dict]:
    """One result dict per case (in order), from as many workers as hangs and crashes need.

    HDF5_PLUGIN_PATH points the worker at a watched folder of its own: libhdf5 searches it
    whenever it cannot open a file (for a driver plugin) and when a dataset names a filter it
    lacks. The first is the library's doing for any file it cannot open and is only counted
    ("plugin_search"); a search during a load that succeeded means the file named a filter
    to load code for, and fails the case (Judge)."""
    plugins = os.path.join(workdir, "hdf5_plugins")
    os.makedirs(plugins, exist_ok=True)
    job = {"repo": REPO, "canary_dir": canaries.directory, "headroom": headroom,
           "marker": os.path.join(canaries.directory, "bait_ran"),
           "bases": {k: {"path": b.path, "reference": b.reference,
                         "result": os.path.join(workdir, f"base_{i}.npz")}
                     for i, (k, b) in enumerate(bases.items())},
           "cases": [{"id": c.id, "base": c.base, "path": c.path} for c in cases]}
    job_path = os.path.join(workdir, "job.json")
    with open(job_path, "w") as f:
        json.dump(job, f)
    results: list[dict | None] = [None] * len(cases)
    watches = (CanaryWatch(canaries.directory), CanaryWatch(plugins))
    log = open(os.path.join(workdir, "worker.log"), "ab")
    try:
        first = 0
        while first < len(cases):
            worker = Worker(job_path, first, canaries.directory, plugins, log)
            try:
                first = _cases_in_one_worker(worker, first, cases, results, watches, timeout)
            finally:
                worker.stop()
    finally:
        for watch in watches:
            watch.close()
        log.close()
    return results


def _cases_in_one_worker(worker, first, cases, results, watches, timeout) -> int:
    """Run cases from `first` until all are done or the worker hangs or dies; the next case."""
    canary, plugins = watches
    ready = worker.line(300)
    if ready is None or not ready.startswith("READY"):
        raise RuntimeError(f"the fuzz worker did not start: {ready!r} (see worker.log)")
    touched = canary.events()
    if touched:
        raise RuntimeError(f"the worker's warm-up touched canaries: {touched}")
    plugins.events()
    for current in range(first, len(cases)):
        worker.go()
        line = worker.line(60)
        if not line or line.split() != ["START", str(current)]:
            raise RuntimeError(f"fuzz worker protocol: {line!r} (see worker.log)")
        line = worker.line(timeout)
        if line is None or line == "":
            code = worker.stop()
            results[current] = {"outcome": "timeout" if line is None else "crash",
                                "returncode": code, "opened": [], "code": [],
                                "seconds": timeout if line is None else None}
        else:
            results[current] = json.loads(line.split(" ", 1)[1])
        results[current]["inotify"] = canary.events()
        results[current]["plugin_search"] = bool(plugins.events())
        if line is None or line == "":
            return current + 1
    return len(cases)


# ----------------------------------------------------------------------------- judging

def _arrays(path: str) -> tuple[dict, list]:
    data = np.load(path)
    outputs = [data[k] for k in sorted((k for k in data.files if k.startswith("output_")),
                                       key=lambda k: int(k.split("_")[1]))]
    weights = {k[2:]: data[k] for k in data.files if k.startswith("w/")}
    return weights, outputs


def _close(actual: list, expected: list) -> bool:
    return len(actual) == len(expected) and all(
        np.shape(a) == np.shape(e) and np.allclose(np.asarray(a, np.float64),
                                                   np.asarray(e, np.float64),
                                                   atol=ATOL, rtol=RTOL, equal_nan=True)
        for a, e in zip(actual, expected))


def _same(a, b) -> bool:
    return a.shape == b.shape and np.array_equal(np.asarray(a, np.float64),
                                                 np.asarray(b, np.float64), equal_nan=True)


def _by_layer(weights: dict) -> dict[str, list]:
    """{"layer/path": [arrays in order]} from the worker's "layer/path/i" keys."""
    grouped: dict[str, dict[int, np.ndarray]] = {}
    for key, value in weights.items():
        layer, _, index = key.rpartition("/")
        grouped.setdefault(layer, {})[int(index)] = value
    return {layer: [items[i] for i in sorted(items)] for layer, items in grouped.items()}


class Judge:
    def __init__(self, bases, workdir):
        self.bases = bases
        self.base_weights = {}
        for i, key in enumerate(bases):
            self.base_weights[key] = _arrays(os.path.join(workdir, f"base_{i}.npz"))[0]

    def reference_inputs_outputs(self, base):
        data = np.load(base.reference)
        pick = lambda prefix: [data[k] for k in sorted(  # noqa: E731
            (k for k in data.files if k.startswith(prefix)), key=lambda k: int(k.split("_")[1]))]
        return pick("input_"), pick("output_")

    def with_weights(self, base, weights: dict, keras_model=None) -> list:
        """The base model (or `keras_model`) run with `weights` on the base's inputs."""
        inputs, _ = self.reference_inputs_outputs(base)
        per_layer = _by_layer(weights)
        feed = inputs if len(inputs) > 1 else inputs[0]
        if base.keras_major == 3 or keras_model is not None:
            import keras
            model = keras_model or keras.models.clone_model(base.keras_model)
            for layer in model.layers:
                if layer.weights:
                    layer.set_weights([np.asarray(w, np.float32) for w in per_layer[layer.name]])
            out = model.predict(feed, verbose=0)
            return out if isinstance(out, list) else [out]
        import kerasgl as kg
        from kerasgl.saving import read_model
        spec = read_model(base.path)

        def assign(s, prefix=""):
            for layer in s.layers:
                if layer.inner is not None:
                    assign(layer.inner, f"{prefix}{layer.name}/")
                elif f"{prefix}{layer.name}" in per_layer:
                    layer.weights = per_layer[f"{prefix}{layer.name}"]
        assign(spec)
        with kg.Model.from_spec(spec) as model:
            out = model.predict(feed, verbose=0)
        return [np.asarray(o) for o in (out if isinstance(out, list) else [out])]

    def keras_from_config(self, text: str):
        import keras
        try:
            return keras.models.model_from_json(text)
        except Exception:     # noqa: BLE001 (Keras refusing the config is an answer, not a bug)
            return None

    def __call__(self, case, result: dict) -> str:
        if result is None:
            return "crash"
        if result["code"]:
            return "code_ran"
        if result["opened"] or result.get("inotify"):
            return "read_outside"
        if result["outcome"] in ("timeout", "crash"):
            return result["outcome"]
        if result.get("leak"):
            return "leak"
        if result["outcome"] == "exception":
            inside = result.get("origin", "kerasgl/saving/").startswith("kerasgl/saving/")
            return "raw_exception" if inside else "raw_exception_outside_saving"
        if result["outcome"] == "error":
            # saving/ names the file in every ModelFileError (model.py adds it to the ones
            # layers raise); other errors (a ShapeError from the graph) name the layer
            if result["error"] == "ModelFileError" and not result["names_file"]:
                return "error_without_path"
            return "refused" if result["stage"] == "load" else "refused_at_predict"
        if result.get("plugin_search"):
            return "plugin_loaded_for_file"
        if case.expect == "refuse":
            return "loaded_hostile"
        return self._judge_load(case, result)

    def _judge_load(self, case, result) -> str:
        base = self.bases[case.base]
        weights, outputs = _arrays(result["result"])
        _, expected = self.reference_inputs_outputs(base)
        original = self.base_weights[case.base]
        if result["structure_same"]:
            if sorted(weights) != sorted(original) or any(
                    weights[k].shape != original[k].shape for k in weights):
                return "wrong_weight_shapes"
            changed = [k for k in weights if not _same(weights[k], original[k])]
            if not changed:
                return "correct" if _close(outputs, expected) else "wrong_output"
            if any(not np.all(np.isfinite(np.asarray(weights[k], np.float64)))
                   or np.abs(np.asarray(weights[k], np.float64)).max(initial=0) > 1e4
                   for k in changed):
                shapes_ok = [np.shape(o) for o in outputs] == [np.shape(e) for e in expected]
                return "loaded_extreme_weights" if shapes_ok else "wrong_output"
            return ("correct_changed_weights" if _close(outputs, self.with_weights(base, weights))
                    else "wrong_output")
        if base.keras_major == 3 and case.config_json:
            model = self.keras_from_config(case.config_json)
            if model is not None:
                try:
                    reference = self.with_weights(base, weights, model)
                except Exception:   # noqa: BLE001 (weights Keras cannot take: no reference)
                    reference = None
                if reference is not None:
                    same = _close(outputs, reference)
                    return "correct_changed_config" if same else "wrong_output"
        return "correct_changed_config" if _close(outputs, expected) else "unverified_config_change"


def report(cases, results, verdicts) -> str:
    """Counts by verdict and by category, and every failing case with its evidence."""
    lines = [f"{len(cases)} hostile files"]
    counts = Counter(verdicts)
    for verdict in FAILURES + OUTSIDE_SAVING + PASSES:
        if counts.get(verdict):
            kind = "FAIL" if verdict in FAILURES + OUTSIDE_SAVING else "ok"
            lines.append(f"  {kind:4s} {verdict:26s} {counts[verdict]}")
    by_category: dict[str, Counter] = {}
    for case, verdict in zip(cases, verdicts):
        by_category.setdefault(case.category, Counter())[verdict] += 1
    searches = sum(bool((r or {}).get("plugin_search")) for r in results)
    lines.append(f"  (libhdf5 searched its plugin folder for {searches} file(s) it could not open)")
    lines.append("by category:")
    for category, c in sorted(by_category.items()):
        lines.append(f"  {category:16s} " + ", ".join(f"{v}={n}" for v, n in sorted(c.items())))
    slow = sorted(((r or {}).get("seconds", 0), c.id) for c, r in zip(cases, results))[-3:]
    lines.append("slowest: " + ", ".join(f"{cid} {s}s" for s, cid in reversed(slow)))
    for case, result, verdict in zip(cases, results, verdicts):
        if verdict in FAILURES + OUTSIDE_SAVING or verdict == "unverified_config_change":
            r = result or {}
            detail = r.get("error", "") + ": " + (r.get("message") or "")[:300]
            if verdict.startswith("raw_exception"):
                detail += "\n      " + (r.get("traceback") or "")[-800:].replace("\n", "\n      ")
            if verdict in ("read_outside", "code_ran"):
                detail = f"{r.get('opened')} {r.get('inotify')} {r.get('code')} | {detail}"
            if verdict == "leak":
                detail = r.get("leak", "")
            lines.append(f"  [{verdict}] {case.id}: {detail}")
    return "\n".join(lines)
