"""A model dropped without dispose() keeps its weights on the GPU (nothing but dispose() frees GL
objects), and says so as Python does for an unclosed file: a ResourceWarning naming the model and
its bytes. kg.memory().models and kg.live_models() list the models still holding memory, and the
leak report (kerasgl.testing's) names whose weights leaked tensors are."""
import gc
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from keras_ref import keras

import kerasgl as kg
from kerasgl.tensors import ownership


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5, name="hidden"),
                              keras.layers.Dense(3, name="out")], name="leaky")
    path = str(tmp_path_factory.mktemp("lifetime") / "leaky.keras")
    model.save(path)
    return path


def weight_bytes(model) -> int:
    return sum(w.nbytes for w in model.get_weights())      # float32 on the GPU as in the file


def test_memory_lists_live_models_until_disposed(path):
    before = kg.memory()
    model = kg.load_model(path)
    try:
        info = kg.memory()
        assert model in kg.live_models()
        [usage] = [m for m in info.models if m not in before.models]
        assert usage.name == "leaky" and usage.source == path
        assert usage.bytes == model.gpu_bytes == weight_bytes(model)
        assert usage.bytes == info.num_bytes - before.num_bytes     # every tensor it added
        assert "model 'leaky'" in str(info)
        model.predict(np.zeros((2, 6), "f4"), verbose=0)
        assert model.gpu_bytes >= weight_bytes(model)              # plus any plan's buffers
    finally:
        model.dispose()
    assert model not in kg.live_models()
    assert kg.memory().models == before.models
    assert model.gpu_bytes == 0


def test_dropping_an_undisposed_model_warns_and_frees_nothing(path):
    before = {id(t) for t in ownership.live_tensors()}
    model = kg.load_model(path)
    nbytes = model.gpu_bytes
    held = kg.memory().num_bytes
    with pytest.warns(ResourceWarning) as caught:
        del model
        gc.collect()
    message = str(caught[0].message)
    assert "'leaky'" in message and path in message and f"{nbytes:,} bytes" in message
    assert "dispose()" in message
    # Only a warning: the weights are still on the GPU, and no longer anyone's model.
    assert kg.memory().num_bytes == held
    assert all(m.source != path for m in kg.memory().models)
    leaked = [t for t in ownership.live_tensors() if id(t) not in before]
    assert leaked and sum(t.nbytes for t in leaked) == nbytes
    report = kg.leak_report()
    assert "model 'leaky'" in report and "dropped without dispose()" in report
    assert f"{nbytes:,} bytes" in report
    kg.dispose(leaked)               # what kerasgl.testing.no_leaks does for a leaking test
    assert "model 'leaky'" not in kg.leak_report()


def test_leak_report_names_a_live_undisposed_model(path):
    model = kg.load_model(path)
    try:
        report = ownership.leak_report()
        assert "model 'leaky'" in report and "not disposed" in report
        assert f"{model.gpu_bytes:,} bytes" in report
    finally:
        model.dispose()
    assert "model 'leaky'" not in ownership.leak_report()


@pytest.mark.parametrize("how", ["dispose", "with"])
def test_a_disposed_model_goes_silently(path, how):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if how == "dispose":
            model = kg.load_model(path)
            model.dispose()
        else:
            with kg.load_model(path) as model:
                pass
        del model
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_python_dev_mode_shows_the_warning_for_a_dropped_model(path):
    """As a notebook or script user meets it: `python -X dev` shows ResourceWarnings."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = ("import kerasgl as kg\n"
              f"model = kg.load_model({path!r})\n"
              "del model\n"
              "print('still running')\n")
    env = dict(os.environ, PYTHONPATH=root, KERASGL_COMPILE_AHEAD="0")
    run = subprocess.run([sys.executable, "-X", "dev", "-c", script], capture_output=True,
                         text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "still running" in run.stdout
    assert "ResourceWarning: kerasgl model 'leaky'" in run.stderr
    assert "without dispose()" in run.stderr
