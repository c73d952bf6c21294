"""Misuse gets a kerasgl error that says what is wrong, of the built-in kind a Python user
catches: tidy scopes on several threads, load_model of what is not a path, predict inputs and
arguments of the wrong type or value, and the error classes themselves."""
import os
import pathlib
import threading

import numpy as np
import pytest
from keras_ref import keras

import kerasgl as kg
from kerasgl import errors
from kerasgl.runtime import context
from kerasgl.tensors import ownership

L = keras.layers


# -------------------------------------------------------------------------------------------------
# The error classes
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,builtin", [
    (kg.ShapeError, ValueError), (kg.ModelFileError, ValueError), (kg.InputValueError, ValueError),
    (errors.SettingError, ValueError), (kg.InputTypeError, TypeError),
    (kg.UnsupportedLayerError, NotImplementedError), (kg.GLContextError, RuntimeError),
    (kg.DisposedError, RuntimeError), (kg.GPULimitError, RuntimeError)])
def test_each_error_is_a_kerasgl_error_and_the_builtin_of_its_kind(cls, builtin):
    assert issubclass(cls, kg.KerasGLError) and issubclass(cls, builtin)
    assert cls.__mro__[1] is kg.KerasGLError          # KerasGLError first: it names the library
    with pytest.raises(builtin, match="message"):
        raise cls("message")


# -------------------------------------------------------------------------------------------------
# Scopes are per thread
# -------------------------------------------------------------------------------------------------
def _in_a_scope_on_another_thread(body):
    """Run body() on this thread while another thread holds a tidy scope open; that thread
    closes its scope afterwards. Returns what the other thread saw (depth, error)."""
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def other():
        try:
            with kg.tidy():
                seen["depth"] = ownership.scope_depth()
                entered.set()
                release.wait(10)
        except BaseException as exc:          # noqa: BLE001 - reported to the test
            seen["error"] = exc
        entered.set()

    thread = threading.Thread(target=other)
    thread.start()
    try:
        assert entered.wait(10)
        result = body()
    finally:
        release.set()
        thread.join(10)
    return result, seen


def test_a_scope_on_another_thread_does_not_capture_this_threads_tensors():
    with kg.tidy():
        def make():
            assert ownership.scope_depth() == 1           # this thread's scope only
            return kg.ones([3])
        t, seen = _in_a_scope_on_another_thread(make)
        assert seen == {"depth": 1}                   # the other thread saw its own scope only
        assert not t.is_disposed                      # its scope closing left this one's tensor
        np.testing.assert_array_equal(t.numpy(), np.ones(3, np.float32))
    assert t.is_disposed                              # this thread's scope frees it


def test_a_tensor_made_outside_any_scope_survives_another_threads_scope():
    t, seen = _in_a_scope_on_another_thread(lambda: kg.zeros([2]))
    try:
        assert "error" not in seen and not t.is_disposed
    finally:
        t.dispose()


def test_scope_depth_is_per_thread():
    depths = {}
    with kg.tidy(), kg.tidy():
        thread = threading.Thread(target=lambda: depths.setdefault("other",
                                                                   ownership.scope_depth()))
        thread.start()
        thread.join(10)
        depths["main"] = ownership.scope_depth()
    assert depths == {"other": 0, "main": 2} and ownership.scope_depth() == 0


def test_keep_and_dispose_leave_the_owning_scope():
    with kg.tidy():
        kept = kg.keep(kg.ones([2]))
        freed = kg.ones([2])
        freed.dispose()
        inner_scope = ownership._scopes()[-1]
        assert id(kept) not in inner_scope.tensors and id(freed) not in inner_scope.tensors
    assert not kept.is_disposed
    kept.dispose()


@pytest.fixture
def free_context():
    """The suite's context (made on the main thread) shut down, so that a Worker may own one."""
    kg.shutdown()
    yield
    assert not context.has_context() or context._owner_thread == threading.get_ident()


def test_a_workers_tensors_belong_to_the_workers_scopes(free_context):
    """With a kg.Worker the GL thread is the worker's: a tensor it makes is not captured by the
    scope of the thread that submitted the work (which could not free it: GLContextError)."""
    with kg.Worker() as worker:
        with kg.tidy():
            t = worker.call(kg.ones, [4])
            assert ownership.scope_depth() == 1
        assert not t.is_disposed                  # the caller's scope did not take it
        in_scope = worker.call(kg.tidy.run, lambda: (ownership.scope_depth(), kg.ones([2]))[0])
        assert in_scope == 1
        worker.call(t.dispose)
        assert t.is_disposed and worker.memory().num_tensors == 0


# -------------------------------------------------------------------------------------------------
# load_model of what is not a path
# -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("misuse") / "small.keras")
    keras.Sequential([keras.Input((4,)), L.Dense(3, name="dense")], name="small").save(path)
    return path


@pytest.mark.parametrize("value", [None, 3, 2.5, ["model.keras"], {"path": "m.keras"}],
                         ids=["None", "int", "float", "list", "dict"])
def test_load_model_of_what_is_not_a_path(value):
    with pytest.raises(kg.InputTypeError, match=r"takes the path of a \.keras or \.h5 file.*"
                                                 + type(value).__name__):
        kg.load_model(value)


@pytest.mark.parametrize("value", ["", "model\0.keras"], ids=["empty", "nul"])
def test_load_model_of_an_empty_or_nul_path(value):
    with pytest.raises(kg.InputValueError, match="empty or holds a NUL"):
        kg.load_model(value)


def test_load_model_takes_bytes_and_pathlike_paths_as_open_does(small_path):
    x = np.ones((2, 4), np.float32)
    with kg.load_model(small_path) as model:
        expected = model.predict(x, verbose=0)
    for path in (os.fsencode(small_path), pathlib.Path(small_path)):
        with kg.load_model(path) as model:
            assert model.source == small_path
            np.testing.assert_array_equal(model.predict(x, verbose=0), expected)


def test_load_model_of_a_missing_file_names_it(tmp_path):
    missing = str(tmp_path / "nothing_here.keras")
    with pytest.raises(kg.ModelFileError, match="nothing_here.keras"):
        kg.load_model(os.fsencode(missing))


# -------------------------------------------------------------------------------------------------
# predict's inputs and arguments
# -------------------------------------------------------------------------------------------------
def test_ragged_nested_lists_are_a_shape_error(small_path):
    with kg.load_model(small_path) as model:
        with pytest.raises(kg.ShapeError, match=r"expected shape \(None, 4\), received ragged"):
            model.predict([[1, 2, 3, 4], [1, 2]], verbose=0)
        with pytest.raises(ValueError):
            model.predict([[[1, 2, 3, 4]], [1, 2, 3, 4]], verbose=0)


@pytest.mark.parametrize("value,shown", [(None, "None"), (np.array([["a"] * 4]), "<U1"),
                                          ([[1, 2, 3, None]], "object"),
                                          (np.ones((1, 4), np.complex64), "complex64")],
                         ids=["None", "strings", "None_inside", "complex"])
def test_predict_input_that_is_not_numbers(value, shown, small_path):
    with kg.load_model(small_path) as model:
        with pytest.raises(kg.InputTypeError, match=rf"expected numbers \(float32\).*{shown}"):
            model.predict(value, verbose=0)


@pytest.mark.parametrize("batch_size,cls", [(0, kg.InputValueError), (-1, kg.InputValueError),
                                            (2.5, kg.InputTypeError), ("8", kg.InputTypeError),
                                            (True, kg.InputTypeError), (8.0, kg.InputTypeError)])
def test_batch_size_of_the_wrong_type_or_value(batch_size, cls, small_path):
    with kg.load_model(small_path) as model:
        with pytest.raises(cls, match=rf"batch_size must be a positive integer\. Received "
                                      rf"{repr(batch_size)}"):
            model.predict(np.ones((3, 4), np.float32), batch_size=batch_size, verbose=0)
        with pytest.raises(cls, match="batch_size must be a positive integer"):
            model.warm_up(batch_size=batch_size)
        # A numpy integer is an integer.
        assert model.predict(np.ones((3, 4), np.float32), batch_size=np.int32(2),
                             verbose=0).shape == (3, 3)


def test_verbose_outside_keras_choices(small_path):
    with kg.load_model(small_path) as model:
        for verbose in ("x", 3, None, True):
            with pytest.raises(kg.InputValueError, match=r'verbose must be "auto", 0, 1 or 2'):
                model.predict(np.ones((1, 4), np.float32), verbose=verbose)


def test_outputs_naming_an_unknown_layer_or_of_the_wrong_type(small_path):
    x = np.ones((1, 4), np.float32)
    with kg.load_model(small_path) as model:
        with pytest.raises(kg.InputValueError, match=r"No such layer: 'nope' in model 'small'.*"
                                                     r"'dense'"):
            model.predict(x, outputs="nope", verbose=0)
        with pytest.raises(kg.InputValueError, match="no call number 3"):
            model.predict(x, outputs=("dense", 3), verbose=0)
        with pytest.raises(kg.InputValueError, match="tensor_index 2 does not exist"):
            model.predict(x, outputs=("dense", 0, 2), verbose=0)
        with pytest.raises(kg.InputTypeError, match="takes a layer name.*received int 3"):
            model.predict(x, outputs=3, verbose=0)
        with pytest.raises(kg.InputTypeError, match="3 is not a layer name"):
            model.predict(x, outputs=["dense", 3], verbose=0)
        with pytest.raises(kg.InputValueError, match="No such layer: 'nope'"):
            model.get_layer("nope")
        assert model.predict(x, outputs=["dense"], verbose=0)[0].shape == (1, 3)


def test_embedding_index_out_of_range_is_a_value_error(tmp_path):
    model = keras.Sequential([keras.Input((3,), dtype="int32"), L.Embedding(10, 2, name="emb")],
                             name="emb_model")
    path = str(tmp_path / "emb.keras")
    model.save(path)
    with kg.load_model(path) as loaded:
        with pytest.raises(kg.InputValueError, match=r"Layer 'emb' \(Embedding\): 1 index\(es\) "
                                                     r"out of range.*10 rows.*for example 30"):
            loaded.predict(np.array([[1, 2, 30]], np.int32), verbose=0)
        with pytest.raises(kg.InputValueError, match="outside the int32 range"):
            loaded.predict(np.array([[1, 2, 2 ** 40]], np.int64), verbose=0)
        with pytest.raises(kg.InputValueError, match="not whole numbers"):
            loaded.predict(np.array([[1, 2, 3.5]]), verbose=0)
        # Negative indices count from the end, as in Keras on JAX.
        np.testing.assert_allclose(loaded.predict(np.array([[-1, 0, 9]], np.int32), verbose=0),
                                   model.predict(np.array([[-1, 0, 9]], np.int32), verbose=0),
                                   rtol=1e-6)
