"""The `kerasgl` command, run as a user runs it: a subprocess of this Python (`-m kerasgl.cli`)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from keras_ref import assert_close, keras

ops = keras.ops
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kerasgl(*args, check=True, **environment):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               **environment)
    result = subprocess.run([sys.executable, "-m", "kerasgl.cli", *map(str, args)],
                            capture_output=True, text=True, env=env, timeout=120)
    if check:
        assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    x = keras.Input((4,), name="x")
    one = keras.Model(x, ops.softmax(x * 2.0 + 1.0), name="one")
    a = keras.Input((3,), name="a")
    b = keras.Input((3,), name="b")
    two = keras.Model([a, b], [a * b, ops.sum(a - b, axis=-1, keepdims=True)], name="two")
    paths = {}
    for model, fmt in ((one, ".h5"), (two, ".keras")):
        paths[model.name] = os.path.join(folder, model.name + fmt)
        model.save(paths[model.name])
    return folder, paths, {"one": one, "two": two}


def test_predict_npy_to_npy(models):
    folder, paths, keras_models = models
    x = np.random.default_rng(0).standard_normal((40, 4)).astype("f4")
    np.save(os.path.join(folder, "x.npy"), x)
    out = os.path.join(folder, "y.npy")
    result = kerasgl("predict", paths["one"], os.path.join(folder, "x.npy"), "-o", out,
                     "--batch-size", "16")
    assert "wrote" in result.stdout
    assert_close(np.load(out), keras_models["one"].predict(x, verbose=0))


def test_predict_npz_inputs_by_name_to_npz_outputs(models):
    folder, paths, keras_models = models
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((5, 3)).astype("f4"), rng.standard_normal((5, 3)).astype("f4")
    np.savez(os.path.join(folder, "ab.npz"), b=b, a=a)
    out = os.path.join(folder, "out.npz")
    kerasgl("predict", paths["two"], os.path.join(folder, "ab.npz"), "-o", out)
    expected = keras_models["two"].predict([a, b], verbose=0)
    with np.load(out) as got:
        assert len(got.files) == 2
        for name, e in zip(got.files, expected):
            assert_close(got[name], e)
    # Without -o the outputs are printed.
    printed = kerasgl("predict", paths["two"], os.path.join(folder, "ab.npz")).stdout
    assert "shape (5, 3)" in printed and "shape (5, 1)" in printed


def test_predict_shape_error_exits_1(models):
    folder, paths, _ = models
    np.save(os.path.join(folder, "bad.npy"), np.zeros((2, 5), "f4"))
    result = kerasgl("predict", paths["one"], os.path.join(folder, "bad.npy"), check=False)
    assert result.returncode == 1
    assert "ShapeError" in result.stderr and "expected shape (None, 4)" in result.stderr


def test_summary_and_not_a_model(models, tmp_path):
    _, paths, _ = models
    text = kerasgl("summary", paths["two"]).stdout
    assert 'Model: "two"' in text and "Total params: 0" in text and "(None, 1)" in text
    junk = tmp_path / "junk.keras"
    junk.write_bytes(b"this is not a model")
    result = kerasgl("summary", junk, check=False)
    assert result.returncode == 1 and "ModelFileError" in result.stderr


def test_info_and_gl_objects():
    info = kerasgl("info").stdout
    assert "renderer" in info and "kerasgl" in info
    snapshot = json.loads(kerasgl("gl-objects", "--json").stdout)
    assert isinstance(snapshot, dict)


def test_llvmpipe_inline_mode_predicts_the_same(tmp_path):
    """LP_NUM_THREADS=0 (docs/performance.md: llvmpipe runs each dispatch on the calling thread)
    changes where work groups run, not what they compute: a convolutional model through a plan
    gives Keras's answer, and `info` says which mode is in use. Elsewhere the variable is inert."""
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((12, 12, 3)),
                              keras.layers.Conv2D(8, 3, activation="relu"),
                              keras.layers.MaxPooling2D(),
                              keras.layers.DepthwiseConv2D(3, padding="same"),
                              keras.layers.GlobalAveragePooling2D(),
                              keras.layers.Dense(5, activation="softmax")])
    path, x_path, out = tmp_path / "m.keras", tmp_path / "x.npy", tmp_path / "y.npy"
    model.save(path)
    x = np.random.default_rng(3).standard_normal((6, 12, 12, 3)).astype("f4")
    np.save(x_path, x)
    kerasgl("predict", path, x_path, "-o", out, "--batch-size", "1", LP_NUM_THREADS="0")
    assert_close(np.load(out), model.predict(x, verbose=0))
    info = kerasgl("info", LP_NUM_THREADS="0").stdout
    if "llvmpipe" in info:
        assert "llvmpipe threads: 0 (inline" in info


def test_tune_dry_run_reports_every_trial_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    out = kerasgl("tune", "--dry-run").stdout
    from kerasgl import autotune
    for trial in autotune.TRIALS:
        assert trial.field in out
    assert "choices:" in out
    assert not (tmp_path / "kerasgl").exists()
