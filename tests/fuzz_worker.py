"""The child process of tests/test_hostile_files.py: loads and predicts corpus files one by one.

    python tests/fuzz_worker.py JOB.json FIRST_CASE

Runs with its working directory in the canary folder (so relative external references hit a
canary) and under an address-space limit (RLIMIT_AS, set after the warm-up). An audit hook
records every Python-level open() of a canary and any sign of code from a file being run (the
bait's bytecode unmarshalled or executed, a process spawned); the parent also watches the canary
folder with inotify, which sees the C-level opens libhdf5 makes. Each case ends with a leak check
(kerasgl's registry and the driver's buffer/texture counts back to the warm-up's).

Protocol on stdout, one line each: "@@fuzz READY", "@@fuzz START <i>", "@@fuzz DONE <json>";
before each case the worker waits for a line on stdin, so the parent can collect the inotify
events of one case before the next begins.
"""
from __future__ import annotations

import gc
import json
import os
import resource
import sys
import time
import traceback

PREFIX = "@@fuzz "
BAIT_MARKS = (b"kerasgl-fuzz-bait", b"fuzz_corpus")
SPAWN_EVENTS = ("os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn",
                "os.fork", "ctypes.dlopen")


class Watch:
    """What the audit hook saw during the current case."""

    def __init__(self, canary_dir: str):
        self.canary_dir = os.path.realpath(canary_dir)
        self.opened: list[str] = []
        self.code: list[str] = []
        self.active = False

    def hook(self, event: str, args) -> None:
        if not self.active:
            return
        if event == "open" and args and isinstance(args[0], (str, bytes)):
            path = os.fsdecode(args[0])
            full = os.path.realpath(os.path.join(os.getcwd(), path))
            # (an open of a name that does not exist reads nothing: linecache tries "<unknown>"
            # relative to the working directory while a traceback is formatted)
            inside = full == self.canary_dir or full.startswith(self.canary_dir + os.sep)
            if inside and os.path.exists(full):
                self.opened.append(full)
        elif event == "marshal.loads" and args and isinstance(args[0], (bytes, bytearray)):
            if any(mark in args[0] for mark in BAIT_MARKS):
                self.code.append("marshal.loads of the bait's bytecode")
        elif event == "exec" and args and hasattr(args[0], "co_filename"):
            if any(mark.decode() in args[0].co_filename for mark in BAIT_MARKS):
                self.code.append(f"exec of {args[0].co_filename}")
        elif event.startswith(SPAWN_EVENTS):
            self.code.append(f"{event} {str(args)[:200]}")


def emit(kind: str, payload="") -> None:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    sys.stdout.write(f"{PREFIX}{kind} {text}\n")
    sys.stdout.flush()


def structure(spec) -> str:
    """Everything the graph is built from, weights left out (compared with the base's)."""
    layers = [(l.class_name, l.name, l.module, l.config, l.inbound_nodes,
               structure(l.inner) if l.inner is not None else None) for l in spec.layers]
    return repr((spec.kind, spec.name, layers, spec.inputs, spec.outputs, spec.input_shapes,
                 spec.input_dtypes, spec.input_keys, spec.output_keys, spec.keras_major))


def spec_weights(spec, prefix="") -> dict:
    out = {}
    for layer in spec.layers:
        if layer.inner is not None:
            out.update(spec_weights(layer.inner, f"{prefix}{layer.name}/"))
        else:
            for i, w in enumerate(layer.weights):
                out[f"w/{prefix}{layer.name}/{i}"] = w
    return out


def vm_size() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def load_and_predict(kg, path: str, inputs: list, result_path: str) -> tuple:
    """(outcome fields, structure) for one file; the model is disposed either way."""
    import numpy as np
    model = None
    stage = "load"
    try:
        model = kg.load_model(path)
        stage = "predict"
        outputs = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        arrays = {f"output_{i}": np.asarray(o) for i, o in enumerate(outputs)}
        arrays.update(spec_weights(model._spec))
        np.savez(result_path, **arrays)
        return {"outcome": "loaded", "result": result_path}, structure(model._spec)
    except kg.KerasGLError as exc:
        return {"outcome": "error", "stage": stage, "error": type(exc).__name__,
                "message": str(exc)[:3000], "names_file": path in str(exc)}, None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:       # noqa: B036 (MemoryError, RecursionError, ...: all reported)
        return {"outcome": "exception", "stage": stage, "error": type(exc).__name__,
                "message": str(exc)[:1000], "traceback": traceback.format_exc()[-4000:],
                "origin": origin(exc)}, None
    finally:
        if model is not None:
            try:
                model.dispose()
            except BaseException as exc:   # noqa: B036
                print(f"dispose failed: {exc!r}", file=sys.stderr)


def origin(exc: BaseException) -> str:
    """The innermost kerasgl module the exception passed through ("kerasgl/layers/core/dense.py")."""
    found = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        parts = frame.filename.replace(os.sep, "/").split("/kerasgl/")
        if len(parts) > 1:
            found = "kerasgl/" + parts[-1]
    return found


def leaks(kg, baseline: dict) -> str | None:
    gc.collect()
    m = kg.memory()
    held = {k: u.count for k, u in m.gl_objects.items() if k != "program" and u.count}
    driver = {k: v for k, v in kg.driver_objects().counts().items() if k != "program"}
    if m.num_tensors or held or driver != baseline:
        from kerasgl.tensors import ownership
        for t in ownership.live_tensors():     # so one leaking case does not fail the next
            t.dispose()
        return f"{m}; driver {driver} (warm-up {baseline})"
    return None


def main(job_path: str, first: int) -> None:
    job = json.load(open(job_path))
    sys.path.insert(0, job["repo"])
    watch = Watch(job["canary_dir"])
    import numpy as np
    import kerasgl as kg
    bases = {}
    for key, base in job["bases"].items():
        data = np.load(base["reference"])
        inputs = [data[k] for k in sorted((k for k in data.files if k.startswith("input_")),
                                          key=lambda k: int(k.split("_")[1]))]
        fields, shape = load_and_predict(kg, base["path"], inputs, base["result"])
        if fields["outcome"] != "loaded":
            emit("BASEFAIL", {"base": key, **fields})
            return
        bases[key] = (inputs, shape)
    baseline = {k: v for k, v in kg.driver_objects().counts().items() if k != "program"}
    limit = vm_size() + int(job["headroom"])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.addaudithook(watch.hook)
    emit("READY")
    marker = job["marker"]
    for index in range(first, len(job["cases"])):
        case = job["cases"][index]
        if not sys.stdin.readline():
            return
        emit("START", str(index))
        inputs, base_structure = bases[case["base"]]
        watch.opened, watch.code, watch.active = [], [], True
        started = time.monotonic()
        fields, shape = load_and_predict(kg, case["path"], inputs, case["path"] + ".result.npz")
        watch.active = False
        fields.update(index=index, seconds=round(time.monotonic() - started, 3),
                      opened=watch.opened, code=watch.code, leak=leaks(kg, baseline),
                      structure_same=shape == base_structure if shape else None)
        if os.path.exists(marker):
            fields["code"] = fields["code"] + [f"the bait's marker {marker} exists"]
            os.remove(marker)
        emit("DONE", fields)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
