"""Device policies (kerasgl/devices/): the context picks one by GL_RENDERER and the core calls
only its hooks. Checked for real, in a fresh process each (a process has one context, so one
policy): with the plain policy forced on llvmpipe (KERASGL_DEVICE_POLICY=plain) predict still
matches Keras, no thread is pinned and not one function of kerasgl/devices/llvmpipe/ runs (a
profile hook sees every Python call); with the default policy the same probe sees them run, so
the probe can fail. A driver's kernel quirk is a tuning choice: llvmpipe's power-of-two padding
of convolution weights is one, and both layouts compute what Keras does."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl import devices, settings
from kerasgl.devices.llvmpipe.policy import LlvmpipePolicy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
L = keras.layers

# Loads a model, predicts until its plan has settled, runs an eager one-group op; prints what
# ran of kerasgl/devices/llvmpipe/ and what the driver's threads look like.
PROBE = r"""
import json, os, sys
import numpy as np
import kerasgl as kg
from kerasgl.runtime import context
folder = os.path.join(os.path.dirname(kg.__file__), "devices", "llvmpipe") + os.sep
called = set()

def watch(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.startswith(folder):
        called.add(os.path.basename(frame.f_code.co_filename) + ":" + frame.f_code.co_name)

mask = os.sched_getaffinity(0)
sys.setprofile(watch)
info = kg.info()                                   # the context (and its policy) is made here
x = np.load(sys.argv[2])
with kg.load_model(sys.argv[1]) as model:
    hooks = model._device_hooks
    outs = [model.predict(x, verbose=0) for _ in range(12)]   # recordings, a plan, its trials
    plan = model.plan_info()[0]
with kg.tidy():
    one = kg.tensor(np.ones(3, np.float32))
    (one + one).numpy()                            # an eager dispatch of one work group
sys.setprofile(None)
np.save(sys.argv[3], outs[-1])
moved = [t for t in os.listdir("/proc/self/task") if os.sched_getaffinity(int(t)) != mask]
print(json.dumps({"policy": context.policy().name, "called": sorted(called),
                  "status": plan.status, "placement": plan.placement, "hooks": hooks is not None,
                  "threads": info.compute_threads, "pinned": list(info.pinned_cpus),
                  "moved_threads": len(moved),
                  "same": all(np.array_equal(o, outs[0]) for o in outs)}))
"""


def small_cnn(tmp_path):
    inp = keras.Input((10, 10, 3))
    h = L.Conv2D(8, 3, padding="same", activation="relu")(inp)
    h = L.DepthwiseConv2D(3, padding="same")(h)
    h = L.Conv2D(16, 1)(h)
    h = L.GlobalAveragePooling2D()(h)
    model = keras.Model(inp, L.Dense(4, activation="softmax")(h))
    randomize_weights(model, 5)
    path = str(tmp_path / "cnn.keras")
    model.save(path)
    return model, path


def probe(tmp_path, **environment):
    keras_model, path = small_cnn(tmp_path)
    x = np.random.default_rng(2).uniform(-1, 1, (2, 10, 10, 3)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    env = dict(os.environ, PYTHONPATH=ROOT, **environment)
    result = subprocess.run([sys.executable, "-c", PROBE, path, str(tmp_path / "x.npy"),
                             str(tmp_path / "y.npy")], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert_close(np.load(tmp_path / "y.npy"), keras_model.predict(x, verbose=0))
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_plain_policy_runs_no_llvmpipe_code_and_matches_keras(tmp_path):
    seen = probe(tmp_path, KERASGL_DEVICE_POLICY="plain")
    assert seen["policy"] == "plain"
    assert seen["called"] == [], "llvmpipe code ran under the plain policy"
    assert seen["status"] == "planned" and seen["same"], seen
    assert seen["placement"] == "" and not seen["hooks"]
    assert seen["threads"] is None and seen["pinned"] == []
    assert seen["moved_threads"] == 0, "a thread was pinned"


def test_the_default_policy_on_llvmpipe_runs_its_hooks(tmp_path):
    if "llvmpipe" not in kg.info().renderer.lower():
        pytest.skip("llvmpipe only: elsewhere the default policy is the plain one")
    seen = probe(tmp_path)
    assert seen["policy"] == "llvmpipe"
    for hook in ("threads.py:pin_new_workers", "policy.py:dispatch", "policy.py:plan_built",
                 "compile_ahead.py:maybe_start"):
        assert hook in seen["called"], (hook, seen["called"])
    assert seen["status"] == "planned" and seen["same"], seen
    assert seen["threads"] is not None


def test_an_unknown_policy_setting_fails_the_context_naming_it():
    env = dict(os.environ, PYTHONPATH=ROOT, KERASGL_DEVICE_POLICY="fastest")
    result = subprocess.run([sys.executable, "-c", "import kerasgl as kg; kg.info()"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode != 0
    assert "GLContextError" in result.stderr
    assert "KERASGL_DEVICE_POLICY" in result.stderr and "'fastest'" in result.stderr


def test_the_policy_follows_the_renderer_and_the_setting(monkeypatch):
    monkeypatch.delenv("KERASGL_DEVICE_POLICY", raising=False)
    assert type(devices.policy_for("NVIDIA H200/PCIe/SSE2")) is devices.DevicePolicy
    assert type(devices.policy_for("AMD Radeon RX 7900 XTX (radeonsi, navi31)")) is \
        devices.DevicePolicy
    assert type(devices.policy_for("llvmpipe (LLVM 15.0.7, 256 bits)")) is LlvmpipePolicy
    with settings.override(device_policy="plain"):
        assert type(devices.policy_for("llvmpipe (LLVM 15.0.7, 256 bits)")) is \
            devices.DevicePolicy
    monkeypatch.setenv("KERASGL_DEVICE_POLICY", "plain")
    assert type(devices.policy_for("llvmpipe (LLVM 15.0.7, 256 bits)")) is devices.DevicePolicy


def test_the_plain_policys_hooks_just_run_what_they_are_given():
    plain = devices.DevicePolicy()
    ran = []
    plain.dispatch(lambda *groups: ran.append(groups), (3, 2, 1))
    steps = ["step a", "step b"]
    replay = plain.plan_built(steps)
    replay.replay(lambda given, timed=False: ran.append((given, timed)))
    assert ran == [(3, 2, 1), (steps, False)]
    assert replay.placement == ""
    assert plain.model_loaded("model.keras", None, list) is None
    assert plain.compute_threads() is None and plain.pinned_cpus() == ()


@pytest.mark.parametrize("padded", [False, True])
def test_power_of_two_padding_of_conv_weights_is_a_tuning_choice(padded):
    layer = L.Conv2D(16, 1)
    layer.build((None, 6, 6, 16))
    rng = np.random.default_rng(int(padded))
    layer.set_weights([rng.uniform(-1, 1, w.shape).astype("float32")
                       for w in layer.get_weights()])
    x = rng.uniform(-1, 1, (1, 6, 6, 16)).astype("float32")
    with settings.override(tuning=f"conv_weights_not_power_of_two={int(padded)}"), kg.tidy():
        packed = kg.ops.conv.pack_conv(layer.kernel.numpy(), layer.bias.numpy(), 1, kg.tensor)
        # 16 -> 16 channels, 1x1: 64 vec4s packed, a power of two.
        assert packed.weights.size == 256 + (4 if padded else 0)
        assert_close(kg.ops.conv.conv2d(kg.tensor(x), packed).numpy(), np.asarray(layer(x)))
