"""Execution plans (kerasgl/plans/): predict recorded at an input shape and replayed.

Plans must give bit-identical results to eager execution (and so match Keras), create no GL
object in steady state (asked of the driver), share buffers between intermediates, free their
buffers on eviction and with the model, and step aside (eager) for calls they cannot replay."""
import os

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl.plans import CACHE_SIZE, MAX_RECORDINGS, ModelPlans, written_bindings
from kerasgl.runtime import objects, recording, shaders
from kerasgl.runtime.driver_objects import driver_objects, is_live

L = keras.layers
WARM_UP = 3          # two recorded calls that agree, then the plan replays


def save(model, tmp_path, seed=0):
    randomize_weights(model, seed)
    path = os.path.join(str(tmp_path), f"{model.name}.keras")
    model.save(path)
    return path


def rand(shape, seed=1, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype("float32")


def as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def planned_vs_eager(path, feed, calls=WARM_UP + 2, **kwargs):
    """Outputs of eager predict and of each of `calls` predicts with plans on; the plan infos."""
    with kg.load_model(path) as model:
        model.use_plans = False
        eager = as_list(model.predict(feed, verbose=0, **kwargs))
        model.use_plans = True
        runs = [as_list(model.predict(feed, verbose=0, **kwargs)) for _ in range(calls)]
        return eager, runs, model.plan_info()


def check_identical_and_keras(keras_model, path, feed, **kwargs):
    expected = as_list(keras_model.predict(feed, verbose=0, **kwargs))
    eager, runs, infos = planned_vs_eager(path, feed, **kwargs)
    assert infos and all(i.status == "planned" for i in infos), infos
    for run in runs:
        for a, b in zip(run, eager):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.array_equal(a, b), "a planned predict differs from the eager one"
    for a, e in zip(runs[-1], expected):
        assert_close(a, e)
    return infos


def cnn():
    inp = keras.Input((12, 12, 3))
    x = L.Conv2D(8, 3, padding="same", name="c1")(inp)
    x = L.BatchNormalization(name="bn")(x)
    x = L.ReLU()(x)
    a = L.MaxPooling2D(2)(x)
    b = L.AveragePooling2D(2)(x)
    x = L.Concatenate()([a, b])
    x = L.DepthwiseConv2D(3, padding="same")(x)
    x = L.Conv2D(6, 1, activation="relu")(x)
    x = L.GlobalAveragePooling2D()(x)
    return keras.Model(inp, L.Dense(4, activation="softmax")(x), name="cnn")


def test_cnn_with_batchnorm_pooling_concat_is_planned_and_bit_identical(tmp_path):
    model = cnn()
    path = save(model, tmp_path)
    infos = check_identical_and_keras(model, path, rand((2, 12, 12, 3)))
    info = infos[0]
    assert info.dispatches > 0 and info.shared_buffers > 0
    assert info.peak_live_bytes <= info.planned_bytes < info.naive_bytes


def test_mlp_sequential_with_batches_plans_each_batch_shape(tmp_path):
    model = keras.Sequential([keras.Input((10,)), L.Dense(16, activation="relu"),
                              L.Dropout(0.5), L.Dense(8, activation="tanh"), L.Dense(3)], name="mlp")
    path = save(model, tmp_path)
    # 70 samples in batches of 32: shapes (32, 10) and (6, 10), each its own plan.
    infos = check_identical_and_keras(model, path, rand((70, 10)), batch_size=32)
    assert sorted(i.input_shapes for i in infos) == [((6, 10),), ((32, 10),)]


def test_functional_two_inputs_two_outputs(tmp_path):
    a, b = keras.Input((6,), name="a"), keras.Input((4, 3), name="b")
    flat = L.Flatten()(b)
    joined = L.Concatenate()([L.Dense(5)(a), flat])
    out1 = L.Dense(2, name="out1")(joined)
    out2 = L.Add(name="out2")([L.Dense(12)(a), flat])
    model = keras.Model([a, b], [out1, out2], name="two_by_two")
    path = save(model, tmp_path)
    check_identical_and_keras(model, path, [rand((3, 6)), rand((3, 4, 3), seed=2)])


def test_nested_model(tmp_path):
    inner = keras.Sequential([keras.Input((8,)), L.Dense(8, activation="relu"), L.Dense(4)],
                             name="inner")
    inp = keras.Input((8,))
    x = inner(L.Dense(8)(inp))
    y = inner(L.Dense(8)(x))            # the nested model called twice (shared weights)
    model = keras.Model(inp, L.Activation("sigmoid")(L.Add()([x, y])), name="outer")
    path = save(model, tmp_path)
    check_identical_and_keras(model, path, rand((5, 8)))


def test_steady_state_predict_creates_no_gl_object(tmp_path):
    path = save(cnn(), tmp_path)
    x = rand((1, 12, 12, 3))
    with kg.load_model(path) as model:
        for _ in range(WARM_UP):
            model.predict(x, verbose=0)
        assert model.plan_info()[0].status == "planned"
        before_driver = driver_objects().names
        before_registry = {id(o) for o in objects.live_gl_objects()}

        class Watch:      # every GPU action kerasgl makes reports to the active recorder
            def __init__(self):
                self.events = []

            def __getattr__(self, name):
                return lambda *args: self.events.append(name)

        watch = Watch()
        with recording.recording(watch):
            results = [model.predict(x, verbose=0) for _ in range(3)]
        assert watch.events == [], "a planned predict went through eager code"
        assert driver_objects().names == before_driver
        assert {id(o) for o in objects.live_gl_objects()} == before_registry
        assert all(np.array_equal(r, results[0]) for r in results)


def test_planned_peak_is_far_below_the_naive_sum_on_mobilenetv2(tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3))
    path = os.path.join(str(tmp_path), "mnv2.keras")
    model.save(path)
    x = rand((1, 96, 96, 3), low=0.0, high=1.0)
    expected = model.predict(x, verbose=0)
    eager, runs, infos = planned_vs_eager(path, x, calls=WARM_UP + 1)
    assert np.array_equal(runs[-1][0], eager[0])
    assert_close(runs[-1][0], expected)
    info = infos[0]
    ratio = info.planned_bytes / info.naive_bytes
    print(f"\nMobileNetV2 96x96: {info}; planned/naive = {ratio:.1%}")
    assert info.peak_live_bytes <= info.planned_bytes
    assert ratio <= 0.30


def test_plan_cache_evicts_the_oldest_shape_and_frees_its_buffers(tmp_path):
    path = save(cnn(), tmp_path)
    with kg.load_model(path) as model:
        names = []
        for batch in range(1, CACHE_SIZE + 2):
            x = rand((batch, 12, 12, 3))
            for _ in range(WARM_UP):
                model.predict(x, verbose=0)
            entry = model._plans._entries[next(reversed(model._plans._entries))]
            names.append([o.glo for o in entry.plan._objects if o.kind == "buffer"])
        infos = model.plan_info()
        assert len(infos) == CACHE_SIZE
        assert ((1, 12, 12, 3),) not in [i.input_shapes for i in infos]
        live = driver_objects().names["buffer"]
        assert not any(glo in live for glo in names[0])           # the evicted plan's buffers
        assert all(glo in live for glo in names[-1])
        assert kg.memory().planned_bytes == sum(i.planned_bytes for i in infos) > 0


def test_model_dispose_frees_plan_buffers(tmp_path):
    path = save(cnn(), tmp_path)
    model = kg.load_model(path)
    x = rand((2, 12, 12, 3))
    for _ in range(WARM_UP):
        model.predict(x, verbose=0)
    objects = list(model._plans._entries.values())[0].plan._objects
    glos = [o.glo for o in objects if o.kind == "buffer"]
    assert glos and all(is_live("buffer", g) for g in glos)
    assert kg.memory().planned_bytes > 0
    lines = []
    model.summary(print_fn=lines.append)
    assert "planned" in lines[0] and "shared buffers" in lines[0]
    model.dispose()
    assert not any(is_live("buffer", g) for g in glos)
    assert kg.memory().planned_bytes == 0


def test_predict_on_tensors_returns_fresh_tensors_owned_by_the_scope(tmp_path):
    path = save(cnn(), tmp_path)
    x = rand((2, 12, 12, 3))
    with kg.load_model(path) as model:
        expected = model.predict(x, verbose=0)
        with kg.tidy():
            t = kg.tensor(x)
            outs = [model.predict(t) for _ in range(WARM_UP + 1)]
            assert model.plan_info()[0].status == "planned"
            assert len({o.gl_name for o in outs}) == len(outs)       # each its own buffer
            for o in outs:
                assert np.array_equal(o.numpy(), expected)
        assert all(o.is_disposed for o in outs)                       # owned by the tidy scope


def test_clearing_the_program_cache_makes_the_plan_record_again(tmp_path):
    path = save(cnn(), tmp_path)
    x = rand((2, 12, 12, 3))
    with kg.load_model(path) as model:
        for _ in range(WARM_UP):
            first = model.predict(x, verbose=0)
        shaders.clear_program_cache()
        again = [model.predict(x, verbose=0) for _ in range(WARM_UP + 1)]
        assert all(np.array_equal(a, first) for a in again)
        assert model.plan_info()[0].status == "planned"


def test_stateful_rnn_falls_back_to_eager_and_still_matches_keras(tmp_path):
    inp = keras.Input(batch_shape=(2, 5, 3))
    model = keras.Model(inp, L.LSTM(4, stateful=True)(inp), name="stateful_lstm")
    path = save(model, tmp_path)
    x = rand((2, 5, 3))
    # Keras carries the state across calls of the model (its predict runs from a reset state each
    # time on the JAX backend); kerasgl's predict carries it, as the model's __call__ does.
    expected = [np.asarray(model(x)) for _ in range(WARM_UP + 1)]
    with kg.load_model(path) as loaded:
        actual = [loaded.predict(x, verbose=0) for _ in range(WARM_UP + 1)]
        info = loaded.plan_info()[0]
    assert info.status == "eager" and "state" in info.reason, info
    for a, e in zip(actual, expected):
        assert_close(a, e)


def test_a_call_that_reads_back_falls_back_to_eager():
    # No layer of kerasgl reads back during a call (Embedding's range check is read with the
    # outputs: tests/test_embedding_plans.py); a graph that did would run eagerly.
    def body(x):
        y = x * 2.0
        scale = float(y.numpy().max())          # a value the CPU needs mid-call
        return y * scale

    plans = ModelPlans(_FakeGraph(body), "reads_back")
    try:
        x = rand((4,))
        results = [plans.predict_arrays([x], ["float32"], ["out"])[0] for _ in range(WARM_UP + 1)]
        info = plans.info()[0]
        assert info.status == "eager" and "reads data back" in info.reason, info
        for r in results:
            assert_close(r, (x * 2) * (x * 2).max())
    finally:
        plans.dispose()


class _FakeGraph:
    """A stand-in for Graph (plain Python, real GL): execute runs `body` on the inputs."""

    def __init__(self, body):
        self.body, self.layers = body, {}

    def execute(self, inputs, wanted=None):
        return [self.body(inputs[0])]


def test_calls_that_differ_between_calls_are_not_planned():
    # Random numbers without a seed: every call dispatches with a new seed uniform.
    plans = ModelPlans(_FakeGraph(lambda x: x + kg.random_uniform(list(x.shape))), "noise")
    try:
        x = rand((4,))
        results = [plans.predict_arrays([x], ["float32"], ["out"])[0]
                   for _ in range(MAX_RECORDINGS + 1)]
        info = plans.info()[0]
        assert info.status == "eager" and "differ" in info.reason, info
        assert len({r.tobytes() for r in results}) == len(results)   # still fresh noise each call
    finally:
        plans.dispose()


def test_a_constant_uploaded_during_the_call_is_owned_by_the_plan():
    constant = np.arange(4, dtype=np.float32)

    def body(x):
        c = kg.tensor(constant)
        try:
            return x * c
        finally:
            c.dispose()

    plans = ModelPlans(_FakeGraph(body), "constant")
    try:
        x = rand((4,))
        results = [plans.predict_arrays([x], ["float32"], ["out"])[0] for _ in range(WARM_UP + 1)]
        assert plans.info()[0].status == "planned"
        for r in results:
            np.testing.assert_array_equal(r, x * constant)
        x2 = rand((4,), seed=7)
        np.testing.assert_array_equal(plans.predict_arrays([x2], ["float32"], ["out"])[0],
                                      x2 * constant)
    finally:
        plans.dispose()
    assert kg.memory().planned_bytes == 0


def test_texture_intermediates_get_plan_textures():
    # Ops on texture tensors bind them as images: the plan gives them textures of their own.
    plans = ModelPlans(_FakeGraph(lambda x: _doubled_through_a_texture(x)), "textures")
    try:
        before = driver_objects().counts()["texture"]
        for seed in range(WARM_UP + 2):
            x = rand((5, 7), seed=seed)
            np.testing.assert_array_equal(plans.predict_arrays([x], ["float32"], ["out"])[0],
                                          x * 2.0 + 1.0)
        assert plans.info()[0].status == "planned"
        assert driver_objects().counts()["texture"] > before
    finally:
        plans.dispose()
    assert driver_objects().counts()["texture"] == before


def _doubled_through_a_texture(x):
    with kg.tidy():
        t = x.to_texture()
        return kg.keep((t * 2.0 + 1.0).to_buffer())


def test_a_layer_can_declare_itself_unplannable(tmp_path):
    path = save(cnn(), tmp_path)
    with kg.load_model(path) as model:
        model.get_layer("bn").plannable = False     # (fused away or not, it is still a layer)
        model._plans = ModelPlans(model._graph, model.name)
        x = rand((1, 12, 12, 3))
        results = [model.predict(x, verbose=0) for _ in range(WARM_UP + 1)]
        info = model.plan_info()[0]
        assert info.status == "eager" and "plannable = False" in info.reason
        assert all(np.array_equal(r, results[0]) for r in results)


def test_written_bindings_follow_the_shaders_readonly_qualifiers():
    assert written_bindings("fill.comp", {"IS_INT": False}) == {0}
    assert 0 not in written_bindings("transpose.comp", None)


def test_plans_sharing_programs_replay_their_own_uniforms(tmp_path):
    """Two input sizes of one model run the same programs (sizes are uniforms, not defines), and
    an eager op in between uses one of them too: every replay must write its own uniform values
    back, whatever ran last (dispatch.set_uniforms skips only what the program already holds)."""
    inp = keras.Input((None, None, 3))
    x = L.Conv2D(8, 3, activation="relu")(inp)
    x = L.Conv2D(8, 3, padding="same")(x)
    model = keras.Model(inp, L.Dense(5)(L.GlobalAveragePooling2D()(x)), name="sizes")
    path = save(model, tmp_path)
    feeds = [rand((1, 10, 10, 3), seed=2), rand((2, 14, 13, 3), seed=3)]
    expected = [model.predict(f, verbose=0) for f in feeds]
    other = keras.layers.Conv2D(8, 3, padding="same")
    other.build((None, None, None, 8))
    probe = rand((1, 5, 7, 8), seed=4)
    with kg.load_model(path) as loaded:
        for _ in range(WARM_UP + 2):
            for feed, want in zip(feeds, expected):
                assert_close(loaded.predict(feed, verbose=0), want)
                with kg.tidy():      # an eager convolution of another size in between
                    packed = kg.ops.conv.pack_conv(other.kernel.numpy(), other.bias.numpy(), 1,
                                                   kg.tensor)
                    got = kg.ops.conv.conv2d(kg.tensor(probe), packed,
                                             padding=((1, 1), (1, 1))).numpy()
                assert_close(got, np.asarray(other(probe)))
        assert [i.status for i in loaded.plan_info()] == ["planned", "planned"]


def test_warm_up_reaches_the_steady_state(tmp_path):
    keras_model = cnn()
    path = save(keras_model, tmp_path)
    x = rand((3, 12, 12, 3))
    with kg.load_model(path) as model:
        info = model.warm_up(batch_size=3)
        assert info.status == "planned" and info.input_shapes == ((3, 12, 12, 3),)
        assert not info.placement.startswith("trying")
        before_driver = driver_objects().names
        result = model.predict(x, verbose=0)
        assert driver_objects().names == before_driver       # a replay: nothing made
        assert_close(result, keras_model.predict(x, verbose=0))
        with pytest.raises(ValueError, match="batch_size"):
            model.warm_up(batch_size=0)


def test_warm_up_feeds_every_input_and_refuses_free_dimensions(tmp_path):
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    two = keras.Model([a, b], L.Dense(2)(L.Concatenate()([a, b])))
    with kg.load_model(save(two, tmp_path)) as model:
        assert model.warm_up().status == "planned"
    seq = keras.Input((None, 3), name="tokens")
    free = keras.Model(seq, L.LSTM(2)(seq))
    with kg.load_model(save(free, tmp_path)) as model:
        with pytest.raises(kg.ShapeError, match="'tokens'.*only the batch dimension"):
            model.warm_up()
