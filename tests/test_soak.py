"""A soak: 10,000 predicts of a small model, each under kg.tidy(), half of them with a Tensor input
(whose Tensor result the scope frees). What the driver holds (kg.driver_objects(): buffers,
textures, programs and their bytes), kerasgl's own count of tensors and the process's resident
memory (/proc/self/statm) stay flat: nothing a predict makes outlives it."""
import os
import time

import numpy as np
import pytest
from keras_ref import keras

import kerasgl as kg

PREDICTS = 10_000
CHECKPOINTS = 5
# Resident memory may move by allocator noise, not by what 10,000 predicts would leak: 400 B per
# predict (a dict entry and its key) would already be 4 MB.
RSS_SLACK_BYTES = 3 * 2 ** 20


def resident_bytes() -> int:
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("no /proc/self/statm on this system")
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def held_by_driver() -> tuple:
    objects = kg.driver_objects()
    return tuple(sorted(objects.counts().items())), tuple(sorted(objects.bytes.items()))


def test_ten_thousand_predicts_under_tidy_hold_nothing(tmp_path):
    path = str(tmp_path / "tiny.keras")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="relu")])
    model.save(path)
    x = np.random.default_rng(0).uniform(-1, 1, (2, 8)).astype(np.float32)
    expected = model.predict(x, verbose=0)
    with kg.load_model(path) as loaded:
        def one(i):
            with kg.tidy():
                if i % 2:
                    out = loaded.predict(kg.tensor(x), verbose=0)   # a Tensor, freed by tidy
                    assert out.shape == (2, 4)
                else:
                    out = loaded.predict(x, verbose=0)
            return out

        for i in range(300):                       # plans recorded, programs compiled, caches full
            one(i)
        np.testing.assert_allclose(one(0), expected, rtol=1e-5, atol=1e-6)
        driver, tensors = held_by_driver(), kg.memory().num_tensors
        rss = []
        start = time.perf_counter()
        for checkpoint in range(CHECKPOINTS):
            for i in range(PREDICTS // CHECKPOINTS):
                one(i)
            assert held_by_driver() == driver, f"after {(checkpoint + 1) * 2000} predicts"
            assert kg.memory().num_tensors == tensors
            rss.append(resident_bytes())
        elapsed = time.perf_counter() - start
        np.testing.assert_allclose(one(0), expected, rtol=1e-5, atol=1e-6)
    growth = rss[-1] - rss[0]
    assert growth < RSS_SLACK_BYTES, (f"resident memory grew by {growth} bytes over "
                                      f"{PREDICTS * (CHECKPOINTS - 1) // CHECKPOINTS} predicts: "
                                      f"{rss}")
    print(f"{PREDICTS} predicts in {elapsed:.1f} s; resident memory at each checkpoint: {rss}")
