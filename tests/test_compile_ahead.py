"""The compile-ahead helper (kerasgl/devices/llvmpipe/compile_ahead.py; its body is
kerasgl/compile_ahead_child.py): a process that runs a model's layers last first on zeros, so
that llvmpipe's shader compiles of a cold first predict are shared between two CPUs through
Mesa's disk cache. Checked for real: the helper runs every layer, fills an empty Mesa
cache, ends when the first predict returns, is not started again for a file noted as compiled,
and dies with the process that started it. Results never depend on it (compared with Keras)."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl import compile_ahead_child
from kerasgl.devices.llvmpipe import compile_ahead

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def on_llvmpipe() -> bool:
    try:
        return "llvmpipe" in kg.info().renderer.lower()
    except kg.GLContextError:      # no GL: conftest.py skips every test (or fails a CI run)
        return False


# A string condition is evaluated when the test runs, not at import: collecting this module must
# not touch GL (a machine without it collects the suite and skips it, see conftest.py).
needs_llvmpipe = pytest.mark.skipif("not on_llvmpipe()", reason="the helper runs on llvmpipe only")
L = keras.layers


def nested_model(tmp_path):
    """A functional model with a Sequential nested in it, a residual Add and two inputs' worth
    of layer kinds: the backwards walk must enter the nested model."""
    inner = keras.Sequential([L.Input((8, 8, 4)), L.Conv2D(4, 3, padding="same"),
                              L.BatchNormalization(), L.ReLU()], name="inner")
    inp = keras.Input((8, 8, 3))
    h = L.Conv2D(4, 3, padding="same", activation="relu")(inp)
    h = L.Add()([inner(h), h])
    h = L.DepthwiseConv2D(3, padding="same")(h)
    h = L.GlobalAveragePooling2D()(h)
    model = keras.Model(inp, L.Dense(5, activation="softmax")(h))
    randomize_weights(model, 7)
    path = str(tmp_path / "nested.keras")
    model.save(path)
    return model, path


def test_the_backwards_walk_runs_every_layer_including_nested_ones(tmp_path):
    _, path = nested_model(tmp_path)
    with kg.load_model(path) as model:
        graph = model._graph
        expected = sum(len(n.layer.graph.needed_nodes(list(n.layer.graph.output_refs)))
                       if hasattr(n.layer, "graph") else 1
                       for n in graph.needed_nodes(list(graph.output_refs)))
    assert compile_ahead_child.compile_backwards(path) == expected    # nothing refused zeros


def run_python(code, **environment):
    env = dict(os.environ, PYTHONPATH=ROOT, **environment)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@needs_llvmpipe
def test_the_helper_fills_the_mesa_cache_and_ends_with_the_first_predict(tmp_path):
    keras_model, path = nested_model(tmp_path)
    x = np.random.default_rng(3).uniform(-1, 1, (2, 8, 8, 3)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    mesa_cache, own_cache = tmp_path / "mesa", tmp_path / "xdg"
    code = f"""
import os, time, numpy as np, kerasgl as kg
model = kg.load_model({path!r})
helper = model._device_hooks
assert helper is not None and helper.process.poll() is None, "no helper running"
process = helper.process
time.sleep(3)                      # let it compile something before the predict competes
np.save({str(tmp_path / 'y.npy')!r}, model.predict(np.load({str(tmp_path / 'x.npy')!r}), verbose=0))
assert model._device_hooks is None and process.poll() is not None, "the helper outlived the predict"
"""
    run_python(code, KERASGL_COMPILE_AHEAD="1", MESA_SHADER_CACHE_DIR=str(mesa_cache),
               XDG_CACHE_HOME=str(own_cache))
    assert_close(np.load(tmp_path / "y.npy"), keras_model.predict(x, verbose=0))
    cached = [f for _, _, files in os.walk(mesa_cache) for f in files]
    assert cached, "nothing reached Mesa's shader cache"
    notes = json.loads((own_cache / "kerasgl" / compile_ahead.NOTES_FILE).read_text())
    assert len(notes) == 1


@needs_llvmpipe
def test_a_noted_file_starts_no_helper(tmp_path, monkeypatch):
    _, path = nested_model(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(compile_ahead.ENV, "auto")
    monkeypatch.setattr(compile_ahead, "idle_cpus", lambda: 2.0)   # (test_compile_ahead_idle.py)
    assert compile_ahead.maybe_start(path, compile_ahead.MIN_LAYERS - 1) is None   # too small
    helper = compile_ahead.maybe_start(path, compile_ahead.MIN_LAYERS)
    assert helper is not None
    other = tmp_path / "other.keras"
    other.write_bytes(open(path, "rb").read())
    assert compile_ahead.maybe_start(other, compile_ahead.MIN_LAYERS) is None      # one at a time
    helper.first_predict_done()
    assert helper.process is None
    assert compile_ahead.maybe_start(path, compile_ahead.MIN_LAYERS) is None        # noted
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))                     # re-saved
    helper = compile_ahead.maybe_start(path, compile_ahead.MIN_LAYERS)
    assert helper is not None
    helper.stop()
    monkeypatch.setenv(compile_ahead.ENV, "0")
    assert compile_ahead.maybe_start(path, 10 * compile_ahead.MIN_LAYERS) is None
    monkeypatch.setenv(compile_ahead.ENV, "1")
    monkeypatch.setenv("MESA_SHADER_CACHE_DISABLE", "true")
    assert compile_ahead.maybe_start(path, compile_ahead.MIN_LAYERS) is None
    assert compile_ahead.maybe_start(tmp_path / "missing.keras", compile_ahead.MIN_LAYERS) is None


def slow_to_compile_model(tmp_path):
    """Convolutions with as many activations: a program variant each, ~17 s of compiling for a
    helper with an empty Mesa cache on 2 llvmpipe cores (so it is still at work when its parent
    ends: with the prctl removed, this test fails)."""
    inp = keras.Input((32, 32, 16))
    h = inp
    for activation in ("relu", "tanh", "sigmoid", "elu", "selu", "softplus", "gelu", "swish"):
        h = L.Conv2D(32, 3, padding="same", activation=activation)(h)
    model = keras.Model(inp, h)
    path = str(tmp_path / "slow.keras")
    model.save(path)
    return path


@needs_llvmpipe
def test_the_helper_dies_with_the_process_that_started_it(tmp_path):
    path = slow_to_compile_model(tmp_path)
    code = f"""
import os, time, kerasgl as kg
from kerasgl.devices.llvmpipe import compile_ahead
helper = compile_ahead.maybe_start({path!r}, compile_ahead.MIN_LAYERS)
print(helper.process.pid, flush=True)
time.sleep(2)                      # the helper is compiling by now
os._exit(0)                        # no atexit, no cleanup: only the kernel can end the helper
"""
    pid = int(run_python(code, KERASGL_COMPILE_AHEAD="1", XDG_CACHE_HOME=str(tmp_path / "xdg"),
                         MESA_SHADER_CACHE_DIR=str(tmp_path / "mesa")).split()[-1])
    deadline = time.time() + 1.0
    while time.time() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid), "the helper outlived its parent"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().split(")")[-1].split()[0] != "Z"      # a zombie has ended
    except OSError:
        return False
