"""kerasgl.ray.Predictor on a real local Ray cluster (2 CPUs, 2 actors on llvmpipe, num_gpus=0):
the results of ds.map_batches equal one process's predict, in order, for a one-input model fed
by ray.data.from_numpy's "data" column and for a two-input, two-output model fed by named
columns; and nothing is left running."""
import numpy as np
import pytest
from extras import require

ray = require("ray")
require("ray.data")

import kerasgl as kg  # noqa: E402
import kerasgl.ray  # noqa: E402
from serving_helpers import DIGITS, REPO, build_models  # noqa: E402


def test_predictor_in_this_process_and_its_errors():
    """The class itself, without Ray: what an actor does with a batch (it owns the context, so
    the suite's is shut down first and made again afterwards on this thread). First in the file:
    before the cluster starts."""
    kg.shutdown()
    predictor = kerasgl.ray.Predictor(DIGITS)
    try:
        x = np.zeros((3, 8, 8, 1), np.float32)
        assert predictor({"image": x})["probs"].shape == (3, 10)
        assert predictor.device.reason
        with pytest.raises(kg.ShapeError, match="lacking \\['digit'\\]"):
            predictor({"image": x, "id": np.arange(3)})
    finally:
        predictor.close()
    renamed = kerasgl.ray.Predictor(DIGITS, input_columns="image")
    try:
        out = renamed({"image": np.zeros((2, 8, 8, 1), np.float32), "path": np.array(["a", "b"])})
        assert set(out) == {"path", "probs"} and list(out["path"]) == ["a", "b"]
    finally:
        renamed.close()
    with pytest.raises(kg.ShapeError, match="not inputs"):
        kerasgl.ray.Predictor(DIGITS, input_columns={"pixels": "image"})
    with kg.tidy():
        assert kg.zeros((1,)).numpy().shape == (1,)     # a context on this thread again


def test_predictor_closes_at_the_actors_shutdown_and_never_waits_on_its_own_thread():
    """Ray calls __ray_shutdown__ as an actor ends gracefully: the worker closes there. A
    garbage collection may finalize a predictor on any thread, the worker's own included: that
    queues the close instead of waiting for itself (which used to leave the context open)."""
    kg.shutdown()
    predictor = kerasgl.ray.Predictor(DIGITS)
    worker = predictor._worker
    predictor.__ray_shutdown__()
    assert worker.closed
    kg.Worker().close()              # made only while no thread holds the context: it was freed
    collected = kerasgl.ray.Predictor(DIGITS)
    worker = collected._worker
    worker.submit(collected.__del__).result(30)     # as a collection on the worker's thread
    worker._executor.shutdown(wait=True)
    assert worker.closed
    kg.Worker().close()
    with kg.tidy():
        assert kg.zeros((1,)).numpy().shape == (1,)     # a context on this thread again


def test_predictor_storage_dtype_float16_predicts_keras_with_half_rounded_weights(tmp_path):
    """Predictor(..., storage_dtype="float16") loads the model as load_model does with it: the
    answers are Keras's with the Dense kernels rounded to halves (within 1e-4), unlike the
    float32 weights' by more than that. A value load_model refuses is refused before any worker
    starts. In this process, before the cluster starts (as the tests above)."""
    from half_activation_ref import dense16_file
    from keras_ref import answers_with_half_weights
    model, path, x = dense16_file(tmp_path, output_name="y")
    float32_answer, expected = answers_with_half_weights(model, x)
    assert np.abs(expected - float32_answer).max() > 1e-3
    kg.shutdown()
    predictor = kerasgl.ray.Predictor(path, storage_dtype="float16")
    try:
        assert predictor._model.storage_dtype == "float16"
        np.testing.assert_allclose(predictor({"data": x})["y"], expected, atol=1e-4)
    finally:
        predictor.close()
    with pytest.raises(kg.InputValueError, match="storage_dtype"):
        kerasgl.ray.Predictor(path, storage_dtype="bfloat16")
    with kg.tidy():
        assert kg.zeros((1,)).numpy().shape == (1,)     # a context on this thread again


def test_predictor_activation_dtype_float16_keeps_every_layer_as_halves(tmp_path):
    """Predictor(..., activation_dtype="float16") loads the model as load_model does with it:
    the answers are each layer's output rounded to a half (every value exactly a float16,
    unlike the float32 answer); with storage_dtype too, both hold. A value load_model refuses is
    refused, naming activation_dtype, before any worker starts. In this process, before the
    cluster starts (as the tests above)."""
    from half_activation_ref import dense16_file
    from half_activation_ref import assert_half_activations, dense_answers_with_half_activations
    model, path, x = dense16_file(tmp_path, output_name="y")
    kg.shutdown()
    predictor = kerasgl.ray.Predictor(path, activation_dtype="float16", storage_dtype="float16")
    try:
        assert predictor._model.activation_dtype == "float16"
        assert predictor._model.storage_dtype == "float16"
        assert_half_activations(predictor({"data": x})["y"],
                                *dense_answers_with_half_activations(model, x, True))
    finally:
        predictor.close()
    with pytest.raises(kg.InputValueError, match="activation_dtype='bfloat16'"):
        kerasgl.ray.Predictor(path, activation_dtype="bfloat16")
    with kg.tidy():
        assert kg.zeros((1,)).numpy().shape == (1,)     # a context on this thread again


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": REPO, "KERASGL_COMPILE_AHEAD": "0"}})
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    yield
    ray.shutdown()
    assert not ray.is_initialized()


def test_one_input_model_from_numpy_in_order(cluster):
    x = np.random.default_rng(5).random((40, 8, 8, 1), dtype=np.float32)
    with kg.load_model(DIGITS) as model:
        expected = model.predict(x, verbose=0)
    scored = ray.data.from_numpy(np.array_split(x, 4)).map_batches(     # 4 blocks, 2 actors
        kerasgl.ray.Predictor, fn_constructor_kwargs={"path": DIGITS}, concurrency=2,
        num_gpus=0, batch_size=8)
    rows = scored.take_all()
    assert len(rows) == 40 and set(rows[0]) == {"probs"}
    np.testing.assert_allclose(np.stack([r["probs"] for r in rows]), expected, rtol=1e-5, atol=1e-6)


def test_named_columns_in_and_out(cluster, tmp_path):
    path = build_models(tmp_path)["two"]
    rng = np.random.default_rng(6)
    a = rng.normal(size=(12, 4)).astype(np.float32)
    b = rng.normal(size=(12, 3, 2)).astype(np.float32)
    with kg.load_model(path) as model:
        left, right = model.predict([a, b], verbose=0)
    items = [{"id": i, "a": a[i], "b": b[i]} for i in range(12)]
    out = ray.data.from_items(items, override_num_blocks=3).map_batches(
        kerasgl.ray.Predictor, fn_constructor_kwargs={"path": path}, concurrency=2, num_gpus=0,
        batch_size=4).take_all()
    assert [r["id"] for r in out] == list(range(12))          # passed through, in order
    assert set(out[0]) == {"id", "left", "right"}
    np.testing.assert_allclose(np.stack([r["left"] for r in out]), left, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.stack([r["right"] for r in out]), right, rtol=1e-5, atol=1e-6)
