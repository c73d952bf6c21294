"""kerasgl's GL-object registry against the driver's own answers, and the GL-object dump
(kerasgl/gl_dump.py, scripts/gl_objects.py)."""
import json
import os
import re
import subprocess
import sys

import numpy as np

import kerasgl as kg
from kerasgl.runtime import buffer_views, context, objects
from kerasgl import gl_dump
from kerasgl.tensors import ownership
from kerasgl.runtime.driver_objects import driver_objects, is_live, mismatches, registry_names

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_registry_and_driver_agree_on_every_object_and_byte():
    with kg.tidy():
        buffers = [kg.zeros([n]) for n in (1, 17, 4096)]
        textures = [kg.ones([n], storage="texture") for n in (3, 20000)]   # 20000 > one texture row
        kg.random_uniform([10], seed=1) + 1.0                              # programs too
        assert mismatches() == []
        found, ours = driver_objects(), registry_names()
        for kind in ("buffer", "texture", "program"):
            assert found.names[kind] == ours[kind]
        m = kg.memory()
        assert found.bytes["buffer"] == m.gl_objects["buffer"].bytes
        assert found.bytes["texture"] == m.gl_objects["texture"].bytes
        gl = context.driver()
        for t in buffers:
            assert gl.buffer_size(t.gl_name) == t.nbytes
        width, height, fmt, _ = gl.texture_extent(textures[1].gl_name)
        assert (width, height, fmt) == (16384, 2, 0x822E)   # R32F, row by row
        names = [(t._storage.gl.kind, t.gl_name) for t in buffers + textures]
    assert not any(is_live(kind, glo) for kind, glo in names)
    assert mismatches() == []


def test_an_object_made_behind_kerasgls_back_is_reported():
    stray = context.get_context().buffer(reserve=64)
    try:
        problems = mismatches()
        assert any(f"[{stray.glo}]" in p and "does not know of" in p for p in problems), problems
        assert driver_objects().bytes["buffer"] >= 64
    finally:
        stray.release()
    assert mismatches() == []


def test_gl_objects_snapshot_matches_memory():
    a, b = kg.zeros([100]), kg.zeros([10], storage="texture")
    snap = kg.gl_objects()
    m = kg.memory()
    assert snap["tensors"] == {"count": m.num_tensors, "bytes": m.num_bytes}
    assert snap["registry"]["buffer"] == {"count": m.num_buffers, "bytes": m.gl_objects["buffer"].bytes}
    assert snap["registry"] == snap["driver"] | {"program": snap["registry"]["program"]}
    assert snap["driver"]["program"]["count"] == m.num_programs
    kg.dispose([a, b])


def test_dump_table_and_json(capsys):
    t = kg.zeros([250])
    assert gl_dump.main([]) == 0
    table = capsys.readouterr().out
    assert "buffers" in table and "textures" in table and "programs" in table and "driver" in table
    assert gl_dump.main(["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["registry"]["buffer"]["bytes"] >= 1000 and data["registry"] == {
        k: v for k, v in data["driver"].items()}
    t.dispose()


def test_dump_demo_shows_the_leak_that_tidy_prevents(capsys):
    start = len(ownership.live_tensors())
    assert gl_dump.main(["--demo", "--json"]) == 0
    stages = json.loads(capsys.readouterr().out)
    names = [s["stage"] for s in stages]
    assert names == ["before", "after 100 iterations inside tidy",
                     "after 100 iterations without tidy (leaked)", "after disposing the leaked tensors"]
    count = [s["registry"]["buffer"]["count"] for s in stages]
    assert count[1] == count[0] and count[3] == count[0]
    assert count[2] == count[0] + 400     # random_normal, *, +, relu per iteration; mean disposed
    assert all(s["registry"] == s["driver"] for s in stages)
    assert len(ownership.live_tensors()) == start
    assert gl_dump.main(["--demo"]) == 0
    assert "== after 100 iterations without tidy (leaked)" in capsys.readouterr().out


def test_script_runs_from_anywhere(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "gl_objects.py"), "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["tensors"] == {"count": 0, "bytes": 0}
    assert np.all([data["driver"][k]["count"] == 0 for k in ("buffer", "texture", "program")])


def test_cli_subcommand_reaches_the_dump(capsys):
    from kerasgl import cli
    assert cli.main(["gl-objects", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"tensors", "registry", "driver", "owners", "total_bytes"}
    assert sum(u["bytes"] for u in data["owners"].values()) == data["total_bytes"]


def test_every_gl_object_carries_its_label_in_the_driver(tmp_path):
    """Each GLObject's label is given to the driver at creation (glObjectLabel) and read back
    with glGetObjectLabel: a loaded model's weights say which layer they belong to."""
    from keras_ref import keras, randomize_weights
    model = keras.Sequential([keras.Input((6, 6, 3)), keras.layers.Conv2D(4, 3, name="conv2d_3"),
                              keras.layers.Flatten(), keras.layers.Dense(2, name="dense_7")])
    randomize_weights(model)
    path = str(tmp_path / "labelled.keras")
    model.save(path)
    gl = context.driver()
    before = {id(obj) for obj in objects.live_gl_objects()}
    with kg.load_model(path) as loaded:
        weights = [obj for obj in objects.live_gl_objects() if id(obj) not in before]
        labels = sorted(obj.label for obj in weights)
        assert weights, "loading uploaded no weight"
        assert all(re.fullmatch(r"(conv2d_3|dense_7)/weight\d+", lab) for lab in labels), labels
        assert any(lab.startswith("conv2d_3/") for lab in labels), labels
        assert any(lab.startswith("dense_7/") for lab in labels), labels
        with kg.tidy():
            x = kg.tensor(np.ones((1, 6, 6, 3), np.float32))
            loaded.predict(x, verbose=0)
            view = buffer_views.view_of(x._storage.gl)
            assert gl.label("texture", view.glo) == "rgba32f view of tensor"
            # Every live object, of every kind (weights, tensors, views, programs, plans' buffers):
            # the driver holds exactly the registry's label.
            live = objects.live_gl_objects()
            assert {obj.kind for obj in live} >= {"buffer", "texture", "program"}
            assert [gl.label(obj.kind, obj.glo) for obj in live] == [obj.label for obj in live]
            programs = [obj for obj in live if obj.kind == "program"]
            assert all(obj.label.endswith(".comp") for obj in programs)
