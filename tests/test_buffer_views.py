"""Texture-buffer views of storage buffers (kerasgl/runtime/buffer_views.py): one per buffer, released with
it, counted by the driver as a texture of no bytes of its own, and planned models that read
through them free every one with the model. Checked against the driver itself (glIsTexture)."""
import numpy as np

import kerasgl as kg
from kerasgl.runtime import buffer_views
from kerasgl.runtime import objects
from kerasgl.runtime.driver_objects import driver_objects, is_live, mismatches
from kerasgl.ops import matmul as mm


def test_one_view_per_buffer_released_with_it():
    t = kg.tensor(np.arange(16, dtype=np.float32))
    gl = t._storage.gl
    view = buffer_views.view_of(gl)
    assert buffer_views.view_of(gl) is view            # made once, then reused
    assert view.texels == 4
    assert is_live("texture", view.glo)
    scalar = buffer_views.view_of(gl, "r32f")
    assert scalar is not view and scalar.texels == 16
    t.dispose()
    assert not is_live("texture", view.glo) and not is_live("texture", scalar.glo)
    assert gl.views is None


def test_registry_and_driver_agree_while_views_live():
    with kg.tidy():
        a = kg.tensor(np.ones((64, 64), np.float32))
        b = kg.tensor(np.ones((64, 64), np.float32))
        buffer_views.view_of(a._storage.gl)
        buffer_views.view_of(b._storage.gl)
        assert mismatches() == []
        found = driver_objects()
        ours = sum(obj.nbytes for obj in objects.live_gl_objects() if obj.kind == "texture")
        assert found.bytes["texture"] == ours             # a view's memory is its buffer's


def test_matmul_through_views_matches_numpy(monkeypatch):
    monkeypatch.setenv("KERASGL_TUNING", "matmul_views=1,matmul_as_conv=0")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 40, 36), dtype=np.float32)
    b = rng.standard_normal((36, 20), dtype=np.float32)
    with kg.tidy():
        out = mm.matmul(kg.tensor(a), kg.tensor(b)).numpy()
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_a_planned_model_releases_its_views(tmp_path):
    import keras
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8, 8, 4)),
                              keras.layers.Conv2D(32, 3, activation="relu"),
                              keras.layers.Conv2D(16, 1), keras.layers.Flatten(),
                              keras.layers.Dense(12)])
    path = str(tmp_path / "m.keras")
    model.save(path)
    x = np.random.default_rng(1).standard_normal((2, 8, 8, 4)).astype(np.float32)
    expected = model.predict(x, verbose=0)
    before = driver_objects().counts()
    del before["program"]                  # compiled programs are cached for the process
    loaded = kg.load_model(path)
    for _ in range(4):
        np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-4)
    assert loaded.plan_info()[0].status == "planned"
    assert mismatches() == []
    loaded.dispose()
    after = driver_objects().counts()
    del after["program"]
    assert after == before
