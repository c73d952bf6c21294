"""predict(): batching, the forms of input, Tensors in and out, errors, and memory: intermediates
freed as soon as possible, only weights (and returned outputs) left, dispose and DisposedError."""
import io
import os

import numpy as np
import pytest
from graph_helpers import GLProbe, Probe, Scale, gl_state, gl_test_layers  # noqa: F401
from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl.compiler.feeding import Progress

ops = keras.ops
pytestmark = pytest.mark.usefixtures("gl_test_layers")


def _save(model, tmp_path, fmt=".keras", randomize=True):
    if randomize:
        randomize_weights(model)
    path = os.path.join(tmp_path, model.name + fmt)
    model.save(path)
    return path


@pytest.fixture
def two_in_two_out(tmp_path):
    a = keras.Input((3,), name="a")
    b = keras.Input((3,), name="b")
    s = Scale(name="s")(a)
    model = keras.Model([a, b], [s * b + 1.0, ops.sum(s - b, axis=-1)], name="two_two")
    return model, _save(model, tmp_path)


def test_batches_give_keras_results(two_in_two_out):
    model, path = two_in_two_out
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((70, 3)).astype("f4"), rng.standard_normal((70, 3)).astype("f4")]
    expected = model.predict(data, verbose=0)
    with kg.load_model(path) as loaded:
        for batch_size in (None, 1, 32, 70, 100):
            got = loaded.predict(data, batch_size=batch_size, verbose=0)
            assert len(got) == 2
            for g, e in zip(got, expected):
                assert_close(g, e, what=f"batch_size={batch_size}")


def test_dict_list_tuple_inputs(two_in_two_out):
    model, path = two_in_two_out
    a, b = np.ones((2, 3), "f4"), np.arange(6, dtype="f4").reshape(2, 3)
    expected = model.predict([a, b], verbose=0)
    with kg.load_model(path) as loaded:
        for feed in ([a, b], (a, b), {"b": b, "a": a}, [a.tolist(), b.astype("f8")]):
            for g, e in zip(loaded.predict(feed, verbose=0), expected):
                assert_close(g, e)
        with pytest.raises(kg.ShapeError, match=r"lacks \['b'\]"):
            loaded.predict({"a": a})
        with pytest.raises(kg.ShapeError, match="expects 2 input"):
            loaded.predict(a)
        with pytest.raises(kg.ShapeError, match="same number of samples"):
            loaded.predict([a, b[:1]])


def test_shape_and_dtype_errors_say_expected_and_received(tmp_path):
    x = keras.Input((4, 2), name="pixels")
    model = keras.Model(x, Scale(name="s")(x), name="shapes")
    path = _save(model, tmp_path)
    with kg.load_model(path) as loaded:
        with pytest.raises(kg.ShapeError) as info:
            loaded.predict(np.zeros((3, 4, 5), "f4"))
        assert "expected shape (None, 4, 2)" in str(info.value)
        assert "received shape (3, 4, 5)" in str(info.value)
        with pytest.raises(kg.ShapeError, match=r"received shape \(4, 2\)"):
            loaded.predict(np.zeros((4, 2), "f4"))            # forgot the batch axis
        with pytest.raises(kg.InputTypeError, match="<U1"):
            loaded.predict(np.full((1, 4, 2), "a"))
        t = kg.zeros([1, 4, 2], dtype="int32")
        try:
            with pytest.raises(kg.ShapeError, match="int32 tensor"):
                loaded.predict(t)
        finally:
            t.dispose()
        assert kg.memory().num_tensors == 1                   # the weight only


def test_tensor_inputs_give_tensors_owned_by_the_scope(two_in_two_out):
    model, path = two_in_two_out
    rng = np.random.default_rng(1)
    data = [rng.standard_normal((5, 3)).astype("f4") for _ in range(2)]
    expected = model.predict(data, verbose=0)
    with kg.load_model(path) as loaded:
        weights = kg.memory().num_tensors
        for batch_size in (None, 2):
            with kg.tidy():
                a = kg.tensor(data[0])
                staged = kg.tensor(data[1])
                b = staged.to_texture()                       # either storage is accepted
                staged.dispose()
                out = loaded.predict([a, b], batch_size=batch_size, verbose=0)
                assert all(isinstance(t, kg.Tensor) for t in out)
                for t, e in zip(out, expected):
                    assert_close(t.numpy(), e)
                assert kg.memory().num_tensors == weights + 2 + 2   # inputs + outputs only
            assert all(t.is_disposed for t in out)           # the scope owned them
            assert kg.memory().num_tensors == weights


def test_intermediates_are_freed_after_their_last_use(tmp_path):
    x = keras.Input((256,), name="x")
    y = x
    for _ in range(12):
        y = y * 1.5 + 0.25                      # 24 op nodes in a chain
    y = Probe(name="probe")(y)
    model = keras.Model(x, [Probe(name="late")(y) - x], name="chain")
    path = _save(model, tmp_path, randomize=False)
    data = np.linspace(-1, 1, 2 * 256, dtype="f4").reshape(2, 256)
    with kg.load_model(path) as loaded:
        before = gl_state()
        baseline = kg.memory().num_tensors
        got = loaded.predict(data, verbose=0)
        # When each probe runs, only the input (still needed at the end) and the chain's latest
        # value are alive: 25 intermediates were made, 23 of them already freed.
        assert GLProbe.seen == [baseline + 2, baseline + 2]
        assert gl_state() == before
    assert_close(got, model.predict(data, verbose=0))


def test_only_weights_remain_after_predict_and_dispose_frees_them(tmp_path):
    x = keras.Input((8,), name="x")
    model = keras.Model(x, Scale(name="s2")(Scale(name="s1")(x) + 1.0), name="weights")
    path = _save(model, tmp_path)
    empty = gl_state()
    loaded = kg.load_model(path)
    after_load = gl_state()
    assert after_load[0] == empty[0] + 2 and after_load[4] == empty[4] + 2   # two weight buffers
    loaded.predict(np.ones((40, 8), "f4"), batch_size=16, verbose=0)
    # No intermediate tensor survives predict; the only new GL objects are the buffers of the
    # model's execution plans (kerasgl/plans/), which belong to the model and are counted as planned.
    after_predict = gl_state()
    assert after_predict[:2] == after_load[:2]
    assert kg.memory().planned_bytes > 0
    loaded.use_plans = False                            # frees the plans at once
    # Besides the weights, at most their texture views (buffer_views.py: 0 bytes, kept with
    # the weight buffers that element-wise kernels read through them, freed with them).
    now = gl_state()
    assert now[:3] == after_load[:3] and now[4] == after_load[4]
    assert now[3] - after_load[3] == now[5] - after_load[5] <= 2
    textures = kg.memory().gl_objects.get("texture")     # none where no kernel reads a view
    assert textures is None or textures.bytes == 0
    loaded.use_plans = True
    loaded.predict(np.ones((40, 8), "f4"), batch_size=16, verbose=0)
    loaded.dispose()                                    # frees weights and plans together
    assert gl_state() == empty
    loaded.dispose()                                    # harmless twice
    with pytest.raises(kg.DisposedError, match="disposed"):
        loaded.predict(np.ones((1, 8), "f4"))
    with pytest.raises(kg.DisposedError):
        loaded.summary()


def test_context_manager_disposes(tmp_path):
    x = keras.Input((2,), name="x")
    path = _save(keras.Model(x, Scale(name="s")(x), name="ctx"), tmp_path)
    before = gl_state()
    with kg.load_model(path) as loaded:
        assert not loaded.is_disposed
    assert loaded.is_disposed and gl_state() == before


def test_outputs_returned_to_the_caller_survive_and_are_distinct(tmp_path):
    x = keras.Input((3,), name="x")
    model = keras.Model(x, [Probe(name="p")(x), Probe(name="q")(x)], name="passthrough")
    path = _save(model, tmp_path, randomize=False)
    with kg.load_model(path) as loaded, kg.tidy():
        t = kg.tensor(np.arange(6, dtype="f4").reshape(2, 3))
        p, q = loaded.predict(t, verbose=0)
        assert p is not t and q is not t and p is not q
        p.dispose()
        np.testing.assert_array_equal(q.numpy(), t.numpy())


def test_progress_bar():
    stream = io.StringIO()
    bar = Progress(3, verbose=1, stream=stream)
    for step in (1, 2, 3):
        bar.update(step)
    assert "3/3 [" in stream.getvalue() and stream.getvalue().endswith("\n")
    quiet = io.StringIO()
    bar = Progress(3, verbose="auto", stream=quiet)          # StringIO is not a terminal
    bar.update(3)
    one = io.StringIO()
    bar = Progress(1, verbose=1, stream=one)                 # one batch: a bar, as in Keras
    bar.update(1)
    assert quiet.getvalue() == "" and "1/1 [" in one.getvalue()


def test_predict_prints_progress_with_verbose_1(tmp_path, capsys):
    x = keras.Input((2,), name="x")
    path = _save(keras.Model(x, x + 1.0, name="bar"), tmp_path)
    with kg.load_model(path) as loaded:
        loaded.predict(np.zeros((5, 2), "f4"), batch_size=2, verbose=1)
        assert "3/3" in capsys.readouterr().err
        loaded.predict(np.zeros((5, 2), "f4"), batch_size=2)   # auto: stderr is not a terminal
        assert capsys.readouterr().err == ""


def test_dict_inputs_and_outputs_by_key(tmp_path):
    first = keras.Input((2,), name="first_input")
    second = keras.Input((2,), name="second_input")
    model = keras.Model({"p": first, "q": second}, {"sum": first + second, "prod": first * second},
                        name="dicts")
    path = _save(model, tmp_path, randomize=False)
    feed = {"p": np.ones((3, 2), "f4"), "q": np.full((3, 2), 2.0, "f4")}
    expected = model.predict(feed, verbose=0)
    with kg.load_model(path) as loaded:
        got = loaded.predict(feed, verbose=0)
        assert isinstance(got, dict) and set(got) == set(expected)
        for key in expected:
            assert_close(got[key], expected[key])


def test_architecture_json_plus_weights(tmp_path):
    x = keras.Input((4,), name="x")
    model = keras.Model(x, Scale(name="s")(x) * 3.0, name="from_json")
    randomize_weights(model)
    weights = os.path.join(tmp_path, "from_json.weights.h5")
    model.save_weights(weights)
    data = np.random.default_rng(3).standard_normal((2, 4)).astype("f4")
    with kg.load_model_from_json(model.to_json(), weights) as loaded:
        assert_close(loaded.predict(data, verbose=0), model.predict(data, verbose=0))


def test_batches_too_large_for_one_storage_buffer_are_split(tmp_path):
    """A batch whose intermediate would exceed GL_MAX_SHADER_STORAGE_BLOCK_SIZE runs as several
    GPU batches instead of failing (32 MobileNetV2 images at 224 exceed llvmpipe's 128 MiB)."""
    limit = kg.info().limits.max_ssbo_block_bytes
    width = 8192                                     # 32 KiB per sample in the wide layer
    count = limit // (4 * width) + 3                 # one more than fits in a single buffer
    x = keras.Input((16,), name="x")
    model = keras.Model(x, keras.layers.Dense(1)(keras.layers.Dense(width, activation="relu")(x)))
    data = np.random.default_rng(0).uniform(-1, 1, (count, 16)).astype("float32")
    path = _save(model, tmp_path)                    # randomises the weights first
    expected = model.predict(data, batch_size=count, verbose=0)
    with kg.load_model(path) as loaded:
        assert loaded._largest_fitting_batch() < count
        actual = loaded.predict(data, batch_size=count, verbose=0)
        with kg.tidy():                               # Tensor in, Tensor out: split the same way
            from_tensor = loaded.predict(kg.tensor(data), verbose=0).numpy()
    np.testing.assert_allclose(actual, expected, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(from_tensor, expected, atol=1e-4, rtol=1e-4)


def test_fixed_batch_stateful_models_run_in_batches_of_their_size(tmp_path):
    """A stateful model built for a fixed batch size takes any multiple of it, its state carried
    from batch to batch as in Keras's eager calls (Keras 3.15's jitted predict on JAX drops state
    updates, so the reference is the sequence of model(x) calls)."""
    model = keras.Sequential([keras.Input((6, 3), batch_size=2),
                              keras.layers.LSTM(4, stateful=True)], name="fixed_stateful")
    path = _save(model, tmp_path)
    x = np.random.default_rng(0).uniform(-1, 1, (6, 6, 3)).astype("float32")
    model.layers[0].reset_state()
    expected = np.concatenate([np.asarray(model(x[i:i + 2])) for i in range(0, 6, 2)])
    with kg.load_model(path) as loaded:
        np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, atol=1e-4, rtol=1e-4)
        with pytest.raises(kg.ShapeError, match="batches of 2 samples.*batch_size=3"):
            loaded.predict(x, batch_size=3)
        with pytest.raises(kg.ShapeError, match="5 samples, which is not a multiple of 2"):
            loaded.predict(x[:5])


@pytest.mark.parametrize("fmt", [".keras", ".h5"])
def test_fixed_batch_shape_takes_any_batch_as_keras_does(fmt, tmp_path):
    """An InputLayer saved with batch_shape [32, ...] (common in tutorial models): Keras 3
    predicts any number of samples with any batch_size, and so does kerasgl."""
    x_in = keras.Input(batch_shape=(32, 6, 3), name="x")
    y = keras.layers.LSTM(4, return_sequences=True)(keras.layers.Dense(5, activation="relu")(x_in))
    model = keras.Model(x_in, keras.layers.GlobalAveragePooling1D()(y), name="fixed_batch_32")
    path = str(tmp_path / f"fixed{fmt}")
    model.save(path)
    x = np.random.default_rng(1).uniform(-1, 1, (5, 6, 3)).astype("float32")
    with kg.load_model(path) as loaded:
        for count, batch_size in ((5, None), (5, 2), (1, None), (40, 16)):
            data = np.resize(x, (count, 6, 3))
            expected = model.predict(data, batch_size=batch_size, verbose=0)
            np.testing.assert_allclose(loaded.predict(data, batch_size=batch_size, verbose=0),
                                       expected, atol=1e-4, rtol=1e-4)


def test_batch_size_may_be_a_numpy_integer(tmp_path):
    x = keras.Input((3,), name="x")
    path = _save(keras.Model(x, keras.layers.Dense(2)(x), name="npint"), tmp_path)
    with kg.load_model(path) as loaded:
        assert loaded.predict(np.ones((5, 3), "f4"), batch_size=np.int64(2), verbose=0).shape == (5, 2)
        with pytest.raises(kg.InputTypeError, match="positive integer"):
            loaded.predict(np.ones((5, 3), "f4"), batch_size=True)


def test_dispose_from_another_thread_is_refused_and_frees_nothing(tmp_path):
    """The GL context belongs to its thread: a dispose from elsewhere raises GLContextError and
    leaves the model whole, so dispose() on the owning thread still frees every weight."""
    import threading
    x = keras.Input((4,), name="x")
    path = _save(keras.Model(x, keras.layers.Dense(2)(x), name="threaded"), tmp_path)
    before = gl_state()
    loaded = kg.load_model(path)
    errors = []

    def other_thread():
        try:
            loaded.dispose()
        except kg.GLContextError as exc:
            errors.append(exc)

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert errors and not loaded.is_disposed
    loaded.dispose()
    assert gl_state() == before


def test_int_inputs_outside_int32_are_refused(tmp_path):
    """Token ids live as int32 on the GPU: a wider value must not wrap silently into a valid id."""
    x = keras.Input((3,), dtype="int32", name="ids")
    path = _save(keras.Model(x, keras.layers.Embedding(10, 2)(x), name="ids_model"), tmp_path)
    with kg.load_model(path) as loaded:
        with pytest.raises(kg.InputValueError, match="outside the int32 range"):
            loaded.predict(np.array([[1, 2, 2 ** 40]], dtype=np.int64), verbose=0)


def test_numpy_predict_runs_batches_of_32_by_default(tmp_path):
    """Keras's default batch size: 70 samples run as 32 + 32 + 6. The batches are observed on the
    real plan runner (wrapped, not replaced), and the joined result still equals Keras's."""
    x = keras.Input((3,), name="x")
    model = keras.Model(x, keras.layers.Dense(2)(x), name="default_batch")
    path = _save(model, tmp_path)
    data = np.random.default_rng(0).uniform(-1, 1, (70, 3)).astype("float32")
    with kg.load_model(path) as loaded:
        real = loaded._plans.predict_arrays
        seen = []

        def observed(arrays, *args, **kwargs):
            seen.append(len(arrays[0]))
            return real(arrays, *args, **kwargs)

        loaded._plans.predict_arrays = observed
        try:
            actual = loaded.predict(data, verbose=0)
            assert seen == [32, 32, 6]
            seen.clear()
            loaded.predict(data, batch_size=50, verbose=0)
            assert seen == [50, 20]
        finally:
            del loaded._plans.predict_arrays
    assert_close(actual, model.predict(data, verbose=0))


_AUTO_BAR_CHILD = """
import sys
import numpy as np
import kerasgl as kg
with kg.load_model(sys.argv[1]) as model:
    model.predict(np.zeros((70, 2), "float32"))          # verbose="auto", 3 batches of 32
    model.predict(np.zeros((5, 2), "float32"))           # one batch: no bar even on a terminal
sys.stdout.write("isatty=%s" % sys.stderr.isatty())
"""


def _run_child(path, stderr_fd):
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(kg.__file__))))
    return subprocess.Popen([sys.executable, "-c", _AUTO_BAR_CHILD, path], stdout=subprocess.PIPE,
                            stderr=stderr_fd, env=env)


def test_auto_verbose_draws_a_bar_on_a_terminal_only(tmp_path):
    """verbose="auto" (the default): a bar when stderr is a terminal (a pty here), nothing when it
    is a pipe; a single batch draws nothing either way."""
    import select
    import subprocess
    x = keras.Input((2,), name="x")
    path = _save(keras.Model(x, x + 1.0, name="auto_bar"), tmp_path)

    master, slave = os.openpty()
    child = _run_child(path, slave)
    os.close(slave)
    received = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:        # EIO: the child closed the terminal
                break
            if not chunk:
                break
            received += chunk
        out, _ = child.communicate(timeout=60)
    finally:
        os.close(master)
    text = received.decode(errors="replace")
    assert child.returncode == 0, text
    assert out.decode() == "isatty=True"
    assert "3/3 [" in text and "1/3 [" in text and "1/1" not in text

    piped = _run_child(path, subprocess.PIPE)
    out, err = piped.communicate(timeout=60)
    assert piped.returncode == 0, err.decode()
    assert out.decode() == "isatty=False" and b"/3 [" not in err and b"/1" not in err
