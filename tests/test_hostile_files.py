"""Hostile and broken model files: kerasgl refuses them with a ModelFileError naming the file, or
loads them and answers right; it never hangs, never reads outside the file, never runs code
from it, never allocates what the file cannot hold, and leaves nothing on the GPU.

test_hostile_corpus runs the seeded corpus of tests/fuzz_corpus.py (a few hundred files, about
two minutes; `--long-fuzz` runs thousands, with 6 GiB zip bombs) in a worker process under a time
and address-space limit; its counts by outcome are printed (`-s` shows them). The other tests
pin the individual defences with small files of their own.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import h5py
import pytest

import fuzz_corpus
import fuzz_h5
import fuzz_mutations
from fuzz_harness import FAILURES, OUTSIDE_SAVING, CanaryWatch, Judge, report, run
from fuzz_zip import deflated_with_zeros, read_members, stored, zip_bytes
from kerasgl.errors import ModelFileError
from kerasgl.saving import read_model

HERE = os.path.dirname(os.path.abspath(__file__))
KERAS2 = os.path.join(HERE, "data", "keras2")
SEED = 20240601


@pytest.fixture(scope="module")
def keras():
    import keras as keras_module
    return keras_module


def test_hostile_corpus(tmp_path, request):
    long = request.config.getoption("--long-fuzz")
    workdir = str(tmp_path)
    bases = fuzz_corpus.build_bases(workdir, long)
    canaries = fuzz_corpus.make_canaries(workdir)
    cases = fuzz_corpus.build_corpus(workdir, bases, canaries, SEED, long)
    results = run(cases, bases, canaries, workdir, timeout=60 if long else 20,
                  headroom=1 << 30)
    judge = Judge(bases, workdir)
    verdicts = [judge(case, result) for case, result in zip(cases, results)]
    text = report(cases, results, verdicts)
    print("\n" + text)
    escaped = [p for p in ("/tmp/kerasgl-fuzz-absolute",
                           os.path.join(os.path.dirname(os.path.dirname(canaries.directory)),
                                        "kerasgl-fuzz-escape"))
               if os.path.exists(p)]
    assert not escaped, f"zip member names were written out: {escaped}"
    failed = [(case.id, verdict) for case, verdict in zip(cases, verdicts) if verdict in FAILURES]
    assert not failed, f"{len(failed)} hostile file(s) mishandled:\n{text}"
    outside = [case.id for case, verdict in zip(cases, verdicts) if verdict in OUTSIDE_SAVING]
    assert not outside, (f"{len(outside)} file(s) get past saving/ and then crash the layer code "
                         f"with a raw Python exception or are taken with weights of the wrong "
                         f"shape: {outside}\n{text}")


# ============================================================================ isolated loads

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import kerasgl
    start = time.monotonic()
    try:
        kerasgl.saving.read_model(sys.argv[1])
        out = {"outcome": "loaded"}
    except kerasgl.KerasGLError as exc:
        out = {"outcome": type(exc).__name__, "message": str(exc)}
    except BaseException as exc:
        out = {"outcome": "raw " + type(exc).__name__, "message": str(exc)[:500]}
    out["seconds"] = time.monotonic() - start
    print(json.dumps(out))
""")


def read_in_child(path, timeout=60, memory=2 << 30) -> dict:
    """read_model(path) in a fresh interpreter under an address-space limit; a hang fails the
    test at `timeout` instead of blocking the run."""
    import kerasgl
    kerasgl_dir = os.path.dirname(os.path.dirname(kerasgl.__file__))
    env = dict(os.environ, PYTHONPATH=kerasgl_dir)
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(path), str(memory)],
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading {path} did not finish in {timeout} s")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_refused(path, match, **child):
    out = read_in_child(path, **child)
    assert out["outcome"] == "ModelFileError", out
    assert str(path) in out["message"], out
    assert match in out["message"], out
    return out


def keras3_h5(keras, path):
    L = keras.layers
    x = keras.Input((4,), name="x")
    model = keras.Model(x, L.Dense(2, name="d")(L.Dense(3, name="h")(x)))
    model.save(path)
    return path


# ============================================================================ hangs

@pytest.mark.parametrize("source", ["keras3", "keras2"])
def test_zeroed_model_config_heap_is_refused_within_seconds(keras, tmp_path, source):
    """A zeroed region in the heap that holds model_config made libhdf5 spin forever."""
    path = keras3_h5(keras, str(tmp_path / "k3.h5")) if source == "keras3" else \
        os.path.join(KERAS2, "mlp_sequential.h5")
    damaged = fuzz_mutations.heap_damage(open(path, "rb").read())
    assert damaged, "the fixture's model_config heap was not found"
    for name, data in damaged.items():
        target = tmp_path / f"{name}.h5"
        target.write_bytes(data)
        out = read_in_child(target, timeout=60)
        assert out["outcome"] == "ModelFileError", (name, out)
        assert str(target) in out["message"] and out["seconds"] < 5, (name, out)


def test_zeroed_heap_makes_load_model_fail_fast(tmp_path):
    data = fuzz_mutations.heap_damage(open(os.path.join(KERAS2, "cnn_functional.h5"),
                                           "rb").read())["heap_config_object_header"]
    target = tmp_path / "spin.h5"
    target.write_bytes(data)
    code = ("import sys, time, kerasgl as kg\nt = time.monotonic()\n"
            "try:\n    kg.load_model(sys.argv[1])\nexcept kg.ModelFileError as e:\n"
            "    print('refused', time.monotonic() - t, sys.argv[1] in str(e))\n")
    done = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True,
                          text=True, timeout=120)
    verdict, seconds, named = done.stdout.split()
    assert verdict == "refused" and float(seconds) < 5 and named == "True", done.stdout


# ============================================================================ outside the file

@pytest.fixture
def canaries(tmp_path):
    return fuzz_corpus.make_canaries(str(tmp_path))


def surgery_copy(tmp_path, canaries, name, source="mlp_sequential.h5"):
    path = tmp_path / f"{name}.h5"
    shutil.copyfile(os.path.join(KERAS2, source), path)
    with h5py.File(path, "r+") as f:
        fuzz_h5.COMMON[name](fuzz_h5.target(f, name, canaries))
    return path


@pytest.mark.parametrize("name,match", [
    ("external_link_absolute", "ExternalLink"),
    ("external_link_relative", "ExternalLink"),
    ("external_link_layer_group", "ExternalLink"),
    ("external_storage_absolute", "external storage"),
    ("external_storage_relative", "external storage"),
    ("virtual_dataset", "virtual dataset"),
    ("soft_link_outside_tree", "leaves"),
])
def test_nothing_outside_the_file_is_read(tmp_path, canaries, name, match):
    path = surgery_copy(tmp_path, canaries, name)
    watch = CanaryWatch(canaries.directory)
    try:
        with pytest.raises(ModelFileError, match=match) as err:
            read_model(path)
        assert watch.events() == []
    finally:
        watch.close()
    assert str(path) in str(err.value) and "hidden" in str(err.value)   # the dataset/link


def test_links_in_a_keras_zip_weights_file_are_refused(keras, tmp_path, canaries):
    model_path = str(tmp_path / "m.keras")
    keras3_h5(keras, model_path)
    members = read_members(open(model_path, "rb").read())
    scratch = tmp_path / "w.h5"
    scratch.write_bytes(next(m.raw for m in members if m.name == "model.weights.h5"))
    with h5py.File(scratch, "r+") as f:
        fuzz_h5.COMMON["external_link_absolute"](fuzz_h5.target(f, "zl", canaries))
    hostile = tmp_path / "hostile.keras"
    hostile.write_bytes(zip_bytes([stored(m.name, scratch.read_bytes()) if m.name ==
                                   "model.weights.h5" else m for m in members]))
    with pytest.raises(ModelFileError, match="ExternalLink") as err:
        read_model(hostile)
    assert str(hostile) in str(err.value) and "model.weights.h5" in str(err.value)


def test_link_cycles_are_refused(tmp_path, canaries, keras):
    model_path = str(tmp_path / "m.keras")
    keras3_h5(keras, model_path)
    members = read_members(open(model_path, "rb").read())
    for name in ("hard_link_group_cycle", "soft_link_group_cycle", "deep_groups"):
        scratch = tmp_path / "w.h5"
        scratch.write_bytes(next(m.raw for m in members if m.name == "model.weights.h5"))
        with h5py.File(scratch, "r+") as f:
            fuzz_h5.COMMON[name](fuzz_h5.target(f, name, canaries))
        hostile = tmp_path / f"{name}.keras"
        hostile.write_bytes(zip_bytes([stored(m.name, scratch.read_bytes()) if m.name ==
                                       "model.weights.h5" else m for m in members]))
        with pytest.raises(ModelFileError) as err:
            read_model(hostile)
        assert str(hostile) in str(err.value), name


# ============================================================================ sizes

@pytest.mark.parametrize("name", ["huge_unallocated", "huge_compressed_empty",
                                  "huge_compressed_one_chunk"])
def test_declared_sizes_the_file_cannot_hold_fail_fast(tmp_path, canaries, name):
    path = surgery_copy(tmp_path, canaries, name)
    assert os.path.getsize(path) < 1 << 20
    out = assert_refused(path, "declares", memory=2 << 30)
    assert out["seconds"] < 5


def test_zip_bomb_member_is_not_read_whole(keras, tmp_path):
    model_path = str(tmp_path / "m.keras")
    keras3_h5(keras, model_path)
    members = read_members(open(model_path, "rb").read())
    for name in ("config.json", "model.weights.h5"):
        bombed = [deflated_with_zeros(m.name, m.raw, 2 << 30) if m.name == name else m
                  for m in members]
        path = tmp_path / f"bomb_{name}.keras"
        path.write_bytes(zip_bytes(bombed))
        assert os.path.getsize(path) < 8 << 20
        out = assert_refused(path, name, memory=1 << 30)
        assert out["seconds"] < 5


def test_duplicate_zip_members_are_refused(keras, tmp_path):
    model_path = str(tmp_path / "m.keras")
    keras3_h5(keras, model_path)
    members = read_members(open(model_path, "rb").read())
    path = tmp_path / "dup.keras"
    path.write_bytes(zip_bytes(members + [next(m for m in members if m.name == "config.json")]))
    with pytest.raises(ModelFileError, match="config.json.*twice|twice.*config.json") as err:
        read_model(path)
    assert str(path) in str(err.value)


def test_traversal_names_are_never_written(keras, tmp_path):
    model_path = str(tmp_path / "m.keras")
    keras3_h5(keras, model_path)
    members = read_members(open(model_path, "rb").read())
    path = tmp_path / "sub" / "trav.keras"
    path.parent.mkdir()
    path.write_bytes(zip_bytes(members + [stored("../escaped", b"x")]))
    spec = read_model(path)
    assert [l.name for l in spec.layers] == ["x", "h", "d"]
    assert not (tmp_path / "escaped").exists()


# ============================================================================ types

@pytest.mark.parametrize("name", ["dtype_fixed_string", "dtype_vlen_string", "dtype_compound",
                                  "dtype_reference", "dtype_complex", "dtype_vlen_float"])
def test_weights_that_are_not_numbers_are_refused_by_name(tmp_path, canaries, name):
    path = surgery_copy(tmp_path, canaries, name)
    with pytest.raises(ModelFileError) as err:
        read_model(path)
    assert str(path) in str(err.value) and "hidden" in str(err.value), str(err.value)


# ============================================================================ deep JSON

def deep_config(depth: int) -> str:
    with h5py.File(os.path.join(KERAS2, "mlp_sequential.h5"), "r") as f:
        config = json.loads(f.attrs["model_config"])
    config["config"]["layers"][0]["config"]["units"] = "@@"
    return json.dumps(config).replace('"@@"', "[" * depth + "]" * depth)


@pytest.mark.parametrize("depth", [900, 5000, 100000])
def test_json_nested_thousands_deep_is_a_model_file_error(tmp_path, depth):
    text = deep_config(depth)
    path = tmp_path / "deep.h5"
    shutil.copyfile(os.path.join(KERAS2, "mlp_sequential.h5"), path)
    with h5py.File(path, "r+") as f:
        f.attrs["model_config"] = text
    with pytest.raises(ModelFileError, match="nest") as err:
        read_model(path)
    assert str(path) in str(err.value)
    zpath = tmp_path / "deep.keras"
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("config.json", text)
    with pytest.raises(ModelFileError, match="nest"):
        read_model(zpath)
    from kerasgl.saving import read_architecture_json
    with pytest.raises(ModelFileError, match="nest"):
        read_architecture_json(text)


def test_config_normaliser_refuses_deep_dicts_passed_in():
    from kerasgl.saving import read_architecture_json
    from kerasgl.saving.config import model_spec_from_config
    value: dict = {"leaf": 1}
    for _ in range(5000):
        value = {"a": value}
    with h5py.File(os.path.join(KERAS2, "mlp_sequential.h5"), "r") as f:
        config = json.loads(f.attrs["model_config"])
    config["config"]["layers"][1]["config"]["kernel_initializer"] = value
    with pytest.raises(ModelFileError, match="nest"):
        read_architecture_json(config)
    with pytest.raises(ModelFileError, match="nest"):
        model_spec_from_config(config, 2, "<dict>")


def test_every_error_names_the_file(tmp_path):
    """Damage that used to escape as a bare Python exception (a 5000-digit number, an absent
    weights group behind a name list of the wrong type) is a ModelFileError naming the file."""
    path = tmp_path / "digits.h5"
    shutil.copyfile(os.path.join(KERAS2, "mlp_sequential.h5"), path)
    with h5py.File(path, "r+") as f:
        text = f.attrs["model_config"]
        f.attrs["model_config"] = text.replace('"units": 8', '"units": 1' + "0" * 5000)
    with pytest.raises(ModelFileError) as err:
        read_model(path)
    assert str(path) in str(err.value)
