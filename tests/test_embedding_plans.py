"""Text models get execution plans: an Embedding's index range is checked on the GPU (a flag
buffer the gather shader writes, read with the outputs at the end of predict: ops/gpu_checks.py),
not by reading the indices back mid-call. A bad index still raises InputValueError naming the layer
and the index, eager or replayed, and leaves nothing behind."""
import os

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl.ops import embedding_rows
from kerasgl.runtime.driver_objects import driver_objects

L = keras.layers
WARM_UP = 3
VOCAB = 50


def save(model, tmp_path):
    randomize_weights(model, 0)
    path = os.path.join(str(tmp_path), f"{model.name}.keras")
    model.save(path)
    return path


def tokens(shape, seed=0, high=VOCAB):
    return np.random.default_rng(seed).integers(0, high, shape).astype("int32")


def pooled_model():
    return keras.Sequential([keras.Input((7,), dtype="int32"), L.Embedding(VOCAB, 8, name="emb"),
                             L.GlobalAveragePooling1D(), L.Dense(3)], name="pooled")


@pytest.mark.parametrize("build", [
    pooled_model,
    lambda: keras.Sequential([keras.Input((9,), dtype="int32"), L.Embedding(VOCAB, 16),
                              L.LSTM(12), L.Dense(4, activation="softmax")], name="lstm_text"),
    lambda: keras.Sequential([keras.Input((9,), dtype="int32"),
                              L.Embedding(VOCAB, 8, mask_zero=True), L.GRU(6), L.Dense(2)],
                             name="masked_gru"),
], ids=["pooled", "lstm", "masked_gru"])
def test_text_models_are_planned_and_match_keras(build, tmp_path):
    keras_model = build()
    path = save(keras_model, tmp_path)
    x = tokens((4, keras_model.input_shape[1]))
    x[0, -3:] = 0                                   # padding, for the masked model
    expected = keras_model.predict(x, verbose=0)
    with kg.load_model(path) as model:
        results = [model.predict(x, verbose=0) for _ in range(WARM_UP)]
        info = model.plan_info()[0]
        assert info.status == "planned", info
        before = driver_objects().names
        results.append(model.predict(x, verbose=0))
        assert driver_objects().names == before         # a replay makes no GL object
    for r in results:
        assert_close(r, expected)
    assert np.array_equal(results[-1], results[0])    # replayed = eager, bit for bit


@pytest.mark.parametrize("plans", [True, False], ids=["replayed", "eager"])
def test_a_bad_index_raises_naming_the_layer_and_the_index(plans, tmp_path):
    keras_model = pooled_model()
    path = save(keras_model, tmp_path)
    good = tokens((2, 7))
    bad = good.copy()
    bad[1, 4] = VOCAB + 5
    with kg.load_model(path) as model:
        model.use_plans = plans
        for _ in range(WARM_UP):
            model.predict(good, verbose=0)
        assert [i.status for i in model.plan_info()] == (["planned"] if plans else [])
        for _ in range(2):                            # the flags start from zero each call
            with pytest.raises(kg.InputValueError,
                               match=rf"Layer 'emb' \(Embedding\): 1 index\(es\) out of range "
                                     rf"for a lookup table of {VOCAB} rows.*for example "
                                     rf"{VOCAB + 5}\."):
                model.predict(bad, verbose=0)
            assert_close(model.predict(good, verbose=0), keras_model.predict(good, verbose=0))
        negative = good.copy()
        negative[0, 0] = -1                           # from the end: in range
        want = good.copy()
        want[0, 0] = VOCAB - 1
        assert_close(model.predict(negative, verbose=0), keras_model.predict(want, verbose=0))
        with pytest.raises(kg.InputValueError, match="for example -51"):
            model.predict(np.full((2, 7), -VOCAB - 1, np.int32), verbose=0)
        if plans:
            assert model.plan_info()[0].status == "planned"


def test_tensor_inputs_are_checked_too_and_nothing_leaks(tmp_path):
    path = save(pooled_model(), tmp_path)
    with kg.load_model(path) as model:
        good = kg.tensor(tokens((2, 7)))
        for _ in range(WARM_UP):
            with kg.tidy():
                model.predict(good)
        assert model.plan_info()[0].status == "planned"
        bad = kg.tensor(np.full((2, 7), VOCAB, np.int32))
        before = kg.memory()
        with pytest.raises(kg.InputValueError, match="Layer 'emb'.*for example 50"):
            model.predict(bad)
        after = kg.memory()
        assert after.num_tensors == before.num_tensors
        assert after.num_bytes_in_gpu == before.num_bytes_in_gpu
        kg.dispose([good, bad])


def test_gather_on_its_own_still_checks_at_once():
    table = kg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    indices = kg.tensor(np.array([0, 9], np.int32))
    with pytest.raises(kg.InputValueError, match="gather_rows: 1 index.*for example 9"):
        embedding_rows.gather_rows(table, indices)
    kg.dispose([table, indices])
