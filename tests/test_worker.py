"""kg.Worker: one thread owns the GL context; any thread predicts through it. kg.shutdown():
every GL object released, and a later call on another thread makes a fresh context."""
import asyncio
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import kerasgl as kg
from kerasgl.runtime import context, driver_objects, objects

DIGITS = os.path.join(os.path.dirname(kg.__file__), "_data", "digits_cnn.keras")
ZERO = {"buffer": 0, "texture": 0, "program": 0}


@pytest.fixture
def free_context():
    """The suite's context (made on the main thread at session start) shut down first, so that a
    worker may own one; at the end no other thread may be left holding it."""
    kg.shutdown()
    yield
    assert not context.has_context() or context._owner_thread == threading.get_ident(), \
        "a test left the context on another thread"


@pytest.fixture(scope="module")
def digits():
    rng = np.random.default_rng(7)
    x = rng.random((24, 8, 8, 1), dtype=np.float32)
    import keras
    expected = keras.saving.load_model(DIGITS).predict(x, verbose=0)
    return x, expected


def _single_threaded(x):
    with kg.load_model(DIGITS) as model:
        return np.stack([model.predict(x[i:i + 1], verbose=0)[0] for i in range(len(x))])


def test_thread_pool_of_8_predicts_as_one_thread_does(free_context, digits):
    x, expected = digits
    alone = _single_threaded(x)
    kg.shutdown()
    np.testing.assert_allclose(alone, expected, rtol=1e-4, atol=1e-5)
    with kg.Worker() as worker:
        model = kg.load_model(DIGITS, worker=worker)
        assert isinstance(model, kg.WorkerModel) and model.inputs[0].name == "digit"
        before = worker.memory()
        callers = set()

        def one(i):
            callers.add(threading.get_ident())
            return model.predict(x[i % len(x):i % len(x) + 1])
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(one, range(96)))
        assert len(callers) > 1 and worker.thread_id not in callers
        for i, y in enumerate(results):
            np.testing.assert_array_equal(y[0], alone[i % len(x)])
        after = worker.memory()
        # Only the plan of the batch-1 shape was added; no tensor outlived its call.
        assert after.num_tensors == before.num_tensors
        assert after.num_bytes == before.num_bytes
        np.testing.assert_array_equal(model.predict(x), alone)     # a whole batch at once too
        counts = worker.close()
    assert counts == ZERO
    assert model.is_disposed and not context.has_context() and objects.live_gl_objects() == []


def test_asyncio_run_in_executor_and_submit(free_context, digits):
    x, _ = digits
    alone = _single_threaded(x)
    kg.shutdown()

    async def main(model, worker):
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=4) as pool:
            rows = await asyncio.gather(*(loop.run_in_executor(pool, model.predict, x[i:i + 1])
                                          for i in range(len(x))))
        whole = await asyncio.wrap_future(worker.submit(lambda: kg.memory().num_tensors))
        return rows, whole

    with kg.Worker() as worker:
        model = worker.load_model(DIGITS)
        rows, live = asyncio.run(main(model, worker))
        assert live == worker.memory().num_tensors
        np.testing.assert_array_equal(np.concatenate(rows), alone)
        assert worker.close() == ZERO


def test_errors_reach_the_caller_unchanged(free_context):
    class Boom(Exception):
        pass
    raised = Boom("on the worker")

    def fail():
        raise raised
    with kg.Worker() as worker:
        with pytest.raises(Boom) as caught:
            worker.submit(fail).result()
        assert caught.value is raised
        model = worker.load_model(DIGITS)
        with pytest.raises(kg.ShapeError, match="digit"):
            model.predict(np.zeros((2, 9, 9, 1), np.float32))
        with pytest.raises(kg.ModelFileError):
            worker.load_model(__file__)
        # The worker is still fine after its jobs failed.
        assert model.predict(np.zeros((1, 8, 8, 1), np.float32)).shape == (1, 10)
        on_worker = worker.call(kg.zeros, (1, 8, 8, 1))
        with pytest.raises(TypeError, match="numpy arrays"):
            model.predict(on_worker)
        worker.call(on_worker.dispose)
        with pytest.raises(kg.GLContextError, match="its own jobs"):
            worker.submit(worker.close).result()
    assert worker.closed
    with pytest.raises(kg.GLContextError, match="closed"):
        worker.submit(print)


def test_worker_models_take_activation_dtype(free_context, digits):
    """Worker.load_model and load_model(worker=...) take activation_dtype: predict's answers are
    then halves (each layer's output rounded), Keras's run layer by layer with each output
    rounded to a half within model_ulps() spacings (measured 0 on llvmpipe's policy, 3 under the
    plain one's truncating stores); WorkerModel.activation_dtype says
    which and, set on any thread, switches the model on the worker (float32 answers again). A
    bad value raises InputValueError naming it, from the worker as from load_model."""
    import keras
    from half_activation_ref import is_half, model_ulps, spacings_off
    from keras_ref import answers_with_half_activations
    x, expected = digits
    emulated = answers_with_half_activations(keras.saving.load_model(DIGITS), x)[0]
    with kg.Worker() as worker:
        ulps = worker.call(model_ulps)            # the worker's device's tuning
        for model in (worker.load_model(DIGITS, activation_dtype="float16"),
                      kg.load_model(DIGITS, worker=worker, activation_dtype="float16")):
            assert model.activation_dtype == "float16"
            halves = model.predict(x)
            assert is_half(halves)
            assert spacings_off(halves, emulated) <= ulps
            model.activation_dtype = "float32"
            assert model.activation_dtype == "float32"
            full = model.predict(x)
            assert not is_half(full)
            np.testing.assert_allclose(full, expected, atol=1e-4)
            model.dispose()
        with pytest.raises(kg.InputValueError, match="activation_dtype='int8'"):
            worker.load_model(DIGITS, activation_dtype="int8")
        model = worker.load_model(DIGITS)
        with pytest.raises(kg.InputValueError, match="activation_dtype=None"):
            model.activation_dtype = None
        assert model.activation_dtype == "float32"


def test_shutdown_releases_everything_and_another_thread_starts_afresh(free_context, digits):
    x, expected = digits
    model = kg.load_model(DIGITS)
    for _ in range(4):
        first = model.predict(x[:2], verbose=0)          # plans recorded and compiled
    kept = kg.keep(kg.tensor(np.ones((4, 4), np.float32)))
    kept.to_texture().dispose()
    assert driver_objects.driver_objects().count("buffer") > 0
    assert kg.memory().planned_bytes > 0

    counts = kg.shutdown()
    assert counts == ZERO                      # the driver's own count, just before the end
    assert objects.live_gl_objects() == [] and kg.memory().num_tensors == 0
    assert model.is_disposed and kept.is_disposed
    with pytest.raises(kg.DisposedError):
        model.predict(x[:2], verbose=0)
    assert kg.shutdown() is None               # nothing left to close

    seen = {}

    def elsewhere():
        try:
            seen["fresh"] = driver_objects.driver_objects().counts()
            with kg.load_model(DIGITS) as again:
                seen["y"] = again.predict(x[:2], verbose=0)
            seen["mismatches"] = driver_objects.mismatches()
            seen["end"] = kg.shutdown()
        except BaseException as exc:       # reported below, on the test's thread
            seen["error"] = exc
    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join(60)
    assert "error" not in seen, seen.get("error")
    assert seen["fresh"] == ZERO and seen["mismatches"] == [] and seen["end"] == ZERO
    np.testing.assert_array_equal(seen["y"], first)
    np.testing.assert_allclose(seen["y"], expected[:2], rtol=1e-4, atol=1e-5)


def test_a_worker_cannot_take_a_context_another_thread_owns(free_context):
    kg.zeros((2,)).dispose()                   # the main thread owns a context again
    with pytest.raises(kg.GLContextError, match="kg.shutdown"):
        kg.Worker()
    with ThreadPoolExecutor(1) as other, pytest.raises(kg.GLContextError):
        other.submit(kg.shutdown).result()     # nor may another thread shut it down
    assert context.has_context()


def test_close_is_atomic_with_submit(free_context):
    """A submit that has passed its check of the worker's state when close() begins: its job is
    queued before the context's shutdown (close waits for it), never behind it, where it would
    make a fresh context on the exiting thread or fail with the executor's own error. A trace
    function holds the submitting thread at that point, so the race happens every time."""
    import linecache
    worker = kg.Worker()
    reached, go, outcome = threading.Event(), threading.Event(), {}

    def hold_before_queueing(frame, event, arg):
        if frame.f_code.co_name == "submit" and frame.f_code.co_filename.endswith("worker.py"):
            def local(frame, event, arg):
                line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
                if event == "line" and "self._executor.submit(" in line and not reached.is_set():
                    reached.set()
                    go.wait(10)
                return local
            return local
        return None

    def submitter():
        threading.settrace(hold_before_queueing)
        sys.settrace(hold_before_queueing)
        try:
            outcome["result"] = worker.submit(lambda: kg.zeros((4,)).numpy().sum()).result(30)
        except BaseException as exc:
            outcome["result"] = exc
        finally:
            sys.settrace(None)

    submitting = threading.Thread(target=submitter)
    submitting.start()
    assert reached.wait(10)
    closing = threading.Thread(target=lambda: outcome.setdefault("closed", worker.close()))
    closing.start()
    closing.join(0.5)                    # close either waits for the submit, or is done
    go.set()
    submitting.join(30)
    closing.join(30)
    assert outcome["result"] == 0.0, outcome
    assert outcome["closed"] == ZERO
    assert not context.has_context(), "a job ran after the shutdown: a fresh context"
    assert objects.live_gl_objects() == []


def test_close_without_waiting_from_a_job(free_context):
    """close(wait=False) from one of the worker's own jobs (a finalizer run by a garbage
    collection there, say) queues the shutdown instead of waiting for itself."""
    worker = kg.Worker()
    model = worker.load_model(DIGITS)
    worker.submit(worker.close, wait=False).result(30)
    assert worker.closed
    with pytest.raises(kg.GLContextError, match="closed"):
        worker.submit(print)
    worker._executor.shutdown(wait=True)         # the thread has run the shutdown and ended
    assert model.is_disposed and not context.has_context()
    assert worker.close() is None
