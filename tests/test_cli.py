"""The `kerasgl` command, run as a user runs it: a subprocess of this Python (`-m kerasgl.cli`)."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from half_activation_ref import dense16_file
from keras_ref import answers_with_half_weights, assert_close, keras

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
        # every value timed in each round: "False: 1.20/1.31/1.18 ms"
        line = next(l for l in out.splitlines() if l.startswith(trial.field))
        per_round = "/".join([r"\d+\.\d\d"] * autotune.ROUNDS)
        assert len(re.findall(per_round + " ms", line)) == len(trial.values), line
    assert "choices:" in out
    assert not (tmp_path / "kerasgl").exists()


# -- what a user meets at the shell ---------------------------------------------------------------
def run_module(module, *args, **environment):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               **environment)
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=120)


def assert_one_line_error(result, *fragments):
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_version_and_python_dash_m():
    from kerasgl import __version__
    for module in ("kerasgl", "kerasgl.cli"):
        result = run_module(module, "--version")
        assert result.returncode == 0 and result.stdout.strip() == f"kerasgl {__version__}"
    assert "predict" in run_module("kerasgl", "--help").stdout


def test_every_subcommand_has_a_description():
    from kerasgl import cli
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"predict", "summary", "info", "demo", "tune", "gl-objects"} <= set(sub.choices)
    for name, command in sub.choices.items():
        assert command.description and len(command.description) > 10, name
    text = kerasgl("summary", "--help").stdout
    assert sub.choices["summary"].description in text


def test_bad_arguments_print_one_line_and_fail(models, tmp_path):
    folder, paths, _ = models
    x = os.path.join(folder, "x.npy")
    np.save(x, np.zeros((2, 4), "f4"))
    assert_one_line_error(kerasgl("predict", paths["one"], x, "--batch-size", "0", check=False),
                          "--batch-size", "positive integer")
    assert_one_line_error(kerasgl("demo", "--repeats", "0", check=False), "--repeats")
    text_input = tmp_path / "x.txt"
    text_input.write_text("1 2 3 4\n")
    assert_one_line_error(kerasgl("predict", paths["one"], text_input, check=False),
                          "x.txt", ".npy or .npz")
    fake = tmp_path / "fake.npy"
    fake.write_text("not numpy")
    assert_one_line_error(kerasgl("predict", paths["one"], fake, check=False), "fake.npy")
    out = tmp_path / "out.dat"
    assert_one_line_error(kerasgl("predict", paths["one"], x, "-o", out, check=False),
                          "out.dat", ".txt or .csv")
    assert not out.exists()
    assert_one_line_error(kerasgl("predict", tmp_path / "missing.keras", x, check=False),
                          "missing.keras")
    missing_input = kerasgl("predict", paths["one"], tmp_path / "absent.npy", check=False)
    assert_one_line_error(missing_input, "no input file", "absent.npy")
    assert "Errno" not in missing_input.stderr
    assert_one_line_error(kerasgl("no-such-command", check=False), "no-such-command")


@pytest.mark.parametrize("suffix,delimiter", [(".txt", None), (".csv", ",")])
def test_predict_writes_text_where_the_name_says_text(models, suffix, delimiter):
    folder, paths, keras_models = models
    x = np.random.default_rng(4).standard_normal((7, 4)).astype("f4")
    np.save(os.path.join(folder, "x7.npy"), x)
    out = os.path.join(folder, "y" + suffix)
    result = kerasgl("predict", paths["one"], os.path.join(folder, "x7.npy"), "-o", out)
    assert f"wrote {out} (text: 7 rows of 4" in result.stdout
    assert_close(np.loadtxt(out, delimiter=delimiter, dtype="float32"),   # text has no dtype
                 keras_models["one"].predict(x, verbose=0))
    # Several outputs do not fit one text table: refused, pointing at .npz.
    ab = os.path.join(folder, "ab7.npz")
    np.savez(ab, a=x[:, :3], b=x[:, 1:])
    assert_one_line_error(kerasgl("predict", paths["two"], ab, "-o", out, check=False), ".npz")


def test_predict_of_the_shipped_samples_says_how_to_name_the_array():
    from kerasgl.demo import data_path
    model, samples = data_path("digits_cnn.keras"), data_path("digits_samples.npz")
    refused = kerasgl("predict", model, samples, check=False)
    assert_one_line_error(refused, "images", "--array images")
    result = kerasgl("predict", model, samples, "--array", "images", "--verbose", "1")
    assert "probs: shape (24, 10)" in result.stdout
    # One batch (24 samples) still shows Keras's progress bar with --verbose 1.
    assert "1/1 [" in result.stderr


def test_output_into_a_closed_pipe_ends_quietly(models):
    _, paths, _ = models
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for args in (["summary", paths["two"]], ["--help"]):
        process = subprocess.Popen([sys.executable, "-m", "kerasgl", *args], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        process.stdout.close()                  # the reader is gone before the first write
        stderr = process.stderr.read().decode()
        process.wait(timeout=120)
        process.stderr.close()
        assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
        assert process.returncode != 0 or args == ["--help"]


def test_summary_of_mobilenetv2_fits_the_terminal(tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3), alpha=0.35)
    path = tmp_path / "mobilenetv2.keras"
    model.save(path)
    for columns in (100, 120):
        text = kerasgl("summary", path, COLUMNS=str(columns)).stdout
        widest = max(len(line) for line in text.splitlines())
        assert widest <= columns, f"{widest} columns at COLUMNS={columns}"
        # The fusions are still told, under the row of the layer that took them over.
        assert "+ fused in: bn_Conv1, Conv1_relu" in text
        assert "fused into" in text
        for layer in ("Conv1", "block_16_project_BN", "predictions"):
            assert layer in text
        assert f"Total params: {model.count_params():,}" in text


def test_tune_keeps_a_choice_only_when_it_wins_every_round():
    from kerasgl import autotune
    faster, slower = [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]
    assert autotune.decide(False, {False: slower, True: faster}) is True
    # Faster by its median, and by far in two rounds, but not in the third: kept as it was.
    assert autotune.decide(False, {False: [2.0, 2.0, 1.0], True: [1.0, 1.0, 1.0]}) is False
    # A win under the margin in every round is not a win.
    close = [s * (autotune.MARGIN + 0.05) for s in slower]
    assert autotune.decide(False, {False: slower, True: close}) is False
    assert autotune.decide(16, {8: [3.0] * 3, 16: [2.0] * 3, 64: [1.0, 1.0, 2.5]}) == 16
    assert autotune.decide(16, {8: [0.5] * 3, 16: [2.0] * 3, 64: [1.0] * 3}) == 8


def test_predict_storage_dtype_float16_is_keras_with_half_rounded_weights(tmp_path):
    """--storage-dtype float16 loads the model as load_model(storage_dtype="float16") does: the
    answers are Keras's with the kernels rounded to halves (within 1e-4), which differ from the
    float32 weights' answers by more than that (so the option was not ignored)."""
    model, path, x = dense16_file(tmp_path)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    kerasgl("predict", path, tmp_path / "x.npy", "-o", out, "--storage-dtype", "float16")
    float32_answer, expected = answers_with_half_weights(model, x)
    assert np.abs(expected - float32_answer).max() > 1e-3
    assert_close(np.load(out), expected, atol=1e-4)


def test_storage_dtype_option_of_every_loading_command(models, tmp_path):
    """predict, summary, profile and generate take --storage-dtype float32 | float16 (default
    float32); anything else is refused by argparse in one line naming the choices."""
    from kerasgl import cli
    parser = cli.build_parser()
    for command in (["predict", "m.keras", "x.npy"], ["summary", "m.keras"],
                    ["profile", "m.keras"], ["generate", "preset", "hello"]):
        assert parser.parse_args(command).storage_dtype == "float32"
        assert parser.parse_args(command + ["--storage-dtype", "float16"]).storage_dtype == \
            "float16"
    folder, paths, _ = models
    x = os.path.join(folder, "x.npy")
    np.save(x, np.zeros((2, 4), "f4"))
    refused = kerasgl("predict", paths["one"], x, "--storage-dtype", "bogus", check=False)
    assert refused.returncode == 2
    assert_one_line_error(refused, "--storage-dtype", "invalid choice: 'bogus'", "float16")


def test_predict_summary_and_profile_with_activation_dtype_float16(tmp_path):
    """--activation-dtype float16 loads the model as load_model(activation_dtype="float16")
    does: predict's answers are every layer's output rounded to a half (each value exactly a
    float16, unlike the float32 answer), summary says so, and profile's header says so while
    its kernels read and write textures of halves (HALF_TEXTURE)."""
    from half_activation_ref import assert_half_activations, dense_answers_with_half_activations
    model, path, x = dense16_file(tmp_path)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    kerasgl("predict", path, tmp_path / "x.npy", "-o", out, "--activation-dtype", "float16")
    assert_half_activations(np.load(out), *dense_answers_with_half_activations(model, x))
    text = " ".join(kerasgl("summary", path, "--activation-dtype", "float16",
                            "--storage-dtype", "float16").stdout.split())     # lines unwrapped
    assert ('float16: large weight matrices stored as float16 (storage_dtype="float16"); '
            'activations between layers kept as float16 (activation_dtype="float16")') in text
    assert "float16:" not in kerasgl("summary", path).stdout
    profiled = kerasgl("profile", path, "--activation-dtype", "float16", "--runs", "1").stdout
    assert re.search(r"^model 'dense16' \(.+\), float16 activations, input \[1, 16\]",
                     profiled, re.M), profiled
    assert "HALF_TEXTURE" in profiled


def test_activation_dtype_option_of_every_loading_command(models):
    """predict, summary, profile and generate take --activation-dtype float32 | float16
    (default float32); anything else is refused by argparse in one line naming the choices."""
    from kerasgl import cli
    parser = cli.build_parser()
    for command in (["predict", "m.keras", "x.npy"], ["summary", "m.keras"],
                    ["profile", "m.keras"], ["generate", "preset", "hello"]):
        assert parser.parse_args(command).activation_dtype == "float32"
        args = parser.parse_args(command + ["--activation-dtype", "float16"])
        assert cli.cli_io.dtype_options(args) == {"storage_dtype": "float32",
                                           "activation_dtype": "float16"}
    folder, paths, _ = models
    x = os.path.join(folder, "x.npy")
    np.save(x, np.zeros((2, 4), "f4"))
    refused = kerasgl("summary", paths["one"], "--activation-dtype", "float64", check=False)
    assert refused.returncode == 2
    assert_one_line_error(refused, "--activation-dtype", "invalid choice: 'float64'", "float16")
