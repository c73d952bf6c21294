"""Model.warm_up(batch_size) leaves every plan that a predict of that batch size uses compiled,
also when predict splits the batch into GPU sub-batches (a batch whose largest tensor exceeds one
shader storage block: 128 MiB on llvmpipe), each with a plan of its own."""
import os

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl.runtime.driver_objects import driver_objects

L = keras.layers
SIDE, WIDE = 64, 3072            # a 1x1 convolution's output: 48 MiB per sample


def wide_model(tmp_path):
    model = keras.Sequential([keras.Input((SIDE, SIDE, 4)), L.Conv2D(WIDE, 1),
                              L.GlobalAveragePooling2D(), L.Dense(3)], name="wide")
    randomize_weights(model, 0)
    path = os.path.join(str(tmp_path), "wide.keras")
    model.save(path)
    return model, path


def test_warm_up_compiles_the_plan_of_every_sub_batch(tmp_path):
    per_sample = SIDE * SIDE * WIDE * 4
    fitting = kg.info().limits.max_ssbo_block_bytes // per_sample
    if not 1 <= fitting <= 4:
        pytest.skip(f"this GPU fits {fitting} samples of {per_sample} bytes in one buffer: the "
                    "batch would not split (or need too much memory to)")
    batch = fitting + 1                   # predict runs `fitting` samples, then 1
    keras_model, path = wide_model(tmp_path)
    x = np.random.default_rng(2).uniform(-1, 1, (batch, SIDE, SIDE, 4)).astype("float32")
    with kg.load_model(path) as model:
        info = model.warm_up(batch)
        infos = model.plan_info()
        shapes = sorted(i.input_shapes for i in infos)
        assert shapes == sorted([((fitting, SIDE, SIDE, 4),), ((1, SIDE, SIDE, 4),)]), infos
        for i in infos:
            assert i.status == "planned" and not i.placement.startswith("trying"), i
        assert info.input_shapes == ((fitting, SIDE, SIDE, 4),)     # the first GPU run's
        before = driver_objects().names
        result = model.predict(x, batch_size=batch, verbose=0)
        assert driver_objects().names == before       # both runs replayed: nothing made
    assert_close(result, keras_model.predict(x, verbose=0))


def test_warm_up_of_a_batch_that_fits_returns_its_own_entry(tmp_path):
    model = keras.Sequential([keras.Input((6,)), L.Dense(4, activation="relu"), L.Dense(2)],
                             name="small")
    path = os.path.join(str(tmp_path), "small.keras")
    model.save(path)
    with kg.load_model(path) as loaded:
        info = loaded.warm_up(5)
        assert info.status == "planned" and info.input_shapes == ((5, 6),)
        assert [i.input_shapes for i in loaded.plan_info()] == [((5, 6),)]
        loaded.use_plans = False
        assert loaded.warm_up(5) is None                  # no plans: nothing to report
