"""Every GL byte kerasgl holds, split by owner (kg.memory().by_owner, its printed form, `kerasgl
gl-objects`), and the memory of execution plans: model.release_plans() and model.plan_cache_size.
The driver is asked to confirm what the registry says."""
import json
import os

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl import gl_dump
from kerasgl.runtime import objects
from kerasgl.runtime.driver_objects import driver_objects
from kerasgl.tensors import gl_owners
from kerasgl.tensors.gl_owners import OWNERS

L = keras.layers
WARM_UP = 3


def cnn(tmp_path):
    model = keras.Sequential([keras.Input((16, 16, 3)), L.Conv2D(8, 3, activation="relu"),
                              L.DepthwiseConv2D(3, padding="same"), L.GlobalAveragePooling2D(),
                              L.Dense(4)], name="owners")
    randomize_weights(model, 0)
    path = os.path.join(str(tmp_path), "owners.keras")
    model.save(path)
    return model, path


def x_of(batch, seed=1):
    return np.random.default_rng(seed).uniform(-1, 1, (batch, 16, 16, 3)).astype("float32")


def planned(model, x):
    for _ in range(WARM_UP):
        model.predict(x, verbose=0)
    assert model.plan_info()[-1].status == "planned"


def test_memory_splits_every_byte_by_owner(tmp_path):
    base = kg.memory()
    _, path = cnn(tmp_path)
    with kg.load_model(path) as model:
        planned(model, x_of(4))
        mine = kg.ones([1000])
        m = kg.memory()
        owners = m.by_owner
        assert list(owners)[:len(OWNERS)] == list(OWNERS)
        assert sum(u.bytes for u in owners.values()) == m.num_bytes_in_gpu
        assert sum(u.count for u in owners.values()) == sum(u.count for u in m.gl_objects.values())
        # Each owner's share, from what owns it.
        assert owners["plan buffers"].bytes == m.planned_bytes == model.plan_info()[0].planned_bytes
        assert owners["model weights"].bytes == model.gpu_bytes - m.planned_bytes \
            + base.by_owner["model weights"].bytes
        assert owners["tensors"].bytes == base.by_owner["tensors"].bytes + 4000
        assert owners["tensors"].bytes + owners["model weights"].bytes == m.num_bytes
        assert owners["programs"].count == m.num_programs and owners["programs"].bytes == 0
        assert owners["queries"].count == 0
        # Views are the textures of 0 bytes (their memory is their buffer's).
        textures = [o for o in objects.live_gl_objects() if o.kind == "texture"]
        assert owners["views"].count == sum(1 for o in textures if o.nbytes == 0)
        assert owners["views"].bytes == 0
        # The printed form leads with the whole, one line per owner holding anything, each
        # saying whose it is; repr is one short line.
        text = str(m)
        assert text.startswith(f"MemoryInfo: {m.num_bytes_in_gpu:,} B on the GPU")
        for owner, usage in m.by_owner.items():
            if usage.count:
                assert f"  {owner}" in text and gl_owners.MEANING[owner] in text
        assert "views" in text and "buffer_views.py" in text
        assert "\n" not in repr(m) and "num_tensors=" in repr(m) and "buffers=" in repr(m)
        # The driver holds what the registry says, byte for byte.
        found = driver_objects()
        assert found.bytes["buffer"] + found.bytes["texture"] == m.num_bytes_in_gpu
        mine.dispose()


def test_the_dump_shows_the_owners(tmp_path, capsys):
    _, path = cnn(tmp_path)
    with kg.load_model(path) as model:
        planned(model, x_of(2))
        assert gl_dump.main(["--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert list(data["owners"])[:len(OWNERS)] == list(OWNERS)
        assert data["owners"]["plan buffers"]["bytes"] == kg.memory().planned_bytes > 0
        assert sum(u["bytes"] for u in data["owners"].values()) == data["total_bytes"]
        assert data["total_bytes"] == data["driver"]["buffer"]["bytes"] + \
            data["driver"]["texture"]["bytes"]
        assert gl_dump.main([]) == 0
        table = capsys.readouterr().out
        assert "GL bytes by owner" in table and "plan buffers" in table and "queries" in table


def test_release_plans_frees_the_plans_and_keeps_the_model(tmp_path):
    keras_model, path = cnn(tmp_path)
    x = x_of(4)
    with kg.load_model(path) as model:
        planned(model, x)
        held = kg.memory()
        assert held.planned_bytes > 0
        buffers = driver_objects().count("buffer")
        model.release_plans()
        after = kg.memory()
        assert after.planned_bytes == 0 and model.plan_info() == []
        assert after.num_bytes_in_gpu == held.num_bytes_in_gpu - held.planned_bytes
        assert driver_objects().count("buffer") < buffers
        assert not model.is_disposed
        assert_close(model.predict(x, verbose=0), keras_model.predict(x, verbose=0))
        planned(model, x)                                   # plans come back on use
        assert kg.memory().planned_bytes == held.planned_bytes
    with pytest.raises(kg.DisposedError):
        model.release_plans()


def test_plan_cache_size_bounds_the_plans_kept(tmp_path):
    _, path = cnn(tmp_path)
    with kg.load_model(path) as model:
        assert model.plan_cache_size == 3
        for batch in (1, 2, 3):
            planned(model, x_of(batch))
        sizes = {i.input_shapes[0][0]: i.planned_bytes for i in model.plan_info()}
        assert sorted(sizes) == [1, 2, 3] and kg.memory().planned_bytes == sum(sizes.values())
        model.plan_cache_size = 1                    # the two oldest go at once
        assert [i.input_shapes[0][0] for i in model.plan_info()] == [3]
        assert kg.memory().planned_bytes == sizes[3]
        planned(model, x_of(2))                      # a new shape pushes the last one out
        assert [i.input_shapes[0][0] for i in model.plan_info()] == [2]
        assert kg.memory().planned_bytes == sizes[2]
        for bad in (0, -1, 1.5, True):
            with pytest.raises(ValueError, match="at least 1"):
                model.plan_cache_size = bad
        assert model.plan_cache_size == 1
