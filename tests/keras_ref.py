"""Compare kerasgl with real Keras (JAX backend): the reference for every layer and model test.

    from keras_ref import keras, assert_matches_keras
    def test_dense(tmp_path):
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3, activation="relu")])
        assert_matches_keras(model, tmp_path)

assert_matches_keras randomises every weight of the model (so a mistake in a bias or a BatchNorm
statistic cannot hide behind Keras's default zeros/ones), saves it in each format, loads it with
kerasgl, and checks kerasgl's predict against Keras's predict on the same random inputs.
"""
from __future__ import annotations

import contextlib
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kerasgl as kg  # noqa: E402

ATOL = 1e-4
RTOL = 1e-4
FORMATS = (".keras", ".h5")


def randomize_weights(model, seed: int = 0, low: float = -1.0, high: float = 1.0) -> None:
    """Every weight uniform in [low, high); variances (BatchNorm moving_variance) kept positive."""
    rng = np.random.default_rng(seed)
    for layer in model._flatten_layers(include_self=False) if hasattr(model, "_flatten_layers") else model.layers:
        for var in layer.weights:
            value = rng.uniform(low, high, size=var.shape).astype(var.dtype if "float" in str(var.dtype) else "float32")
            if "variance" in var.path:
                value = np.abs(value) + 0.5
            var.assign(value)


def random_inputs(model, batch: int = 2, seed: int = 1, low=-1.0, high=1.0):
    """One random array per model input (batch dimension filled in), as a list."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in model.inputs:
        shape = (batch,) + tuple(d if d is not None else 4 for d in spec.shape[1:])
        if "int" in str(spec.dtype):
            arrays.append(rng.integers(0, 10, size=shape).astype("int32"))
        elif str(spec.dtype) == "bool":
            arrays.append(rng.random(size=shape) < 0.5)
        else:
            arrays.append(rng.uniform(low, high, size=shape).astype("float32"))
    return arrays


def as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def record_difference(actual, expected, atol, rtol, what):
    """With KERASGL_TEST_DIFFS=FILE, appends each comparison's worst |diff| and its share of the
    tolerance to FILE (test, what, |diff|, share): the figures a closing note reports per test."""
    path = os.environ.get("KERASGL_TEST_DIFFS")
    if not path or not np.issubdtype(expected.dtype, np.number) or expected.size == 0:
        return
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    finite = np.isfinite(e)
    diff = np.abs(a - e)[finite] if finite.any() else np.zeros(1)
    share = diff / (atol + rtol * np.abs(e[finite])) if finite.any() else np.zeros(1)
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    with open(path, "a") as out:
        out.write(f"{test}\t{what}\t{float(diff.max()):.3g}\t{float(share.max()):.3f}\n")


def assert_close(actual, expected, atol=ATOL, rtol=RTOL, what="output"):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != Keras {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != Keras {expected.dtype}"
    record_difference(actual, expected, atol, rtol, what)
    np.testing.assert_allclose(actual, expected, atol=atol, rtol=rtol, err_msg=what)


def assert_matches_keras(model, tmp_path, inputs=None, formats=FORMATS, randomize=True, seed=0,
                         atol=ATOL, rtol=RTOL, batch_size=None):
    """Save `model` in each format, load with kerasgl, compare predict with Keras's predict."""
    if randomize:
        randomize_weights(model, seed)
    if inputs is None:
        inputs = random_inputs(model)
    feed = inputs if len(inputs) > 1 else inputs[0]
    expected = as_list(model.predict(feed, verbose=0, batch_size=batch_size))
    for fmt in formats:
        path = os.path.join(str(tmp_path), f"{model.name}{fmt}")
        model.save(path)
        with kg.load_model(path) as loaded:
            actual = as_list(loaded.predict(feed, batch_size=batch_size, verbose=0))
        assert len(actual) == len(expected), f"{fmt}: {len(actual)} outputs, Keras has {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, atol, rtol, what=f"{model.name}{fmt} output {i}")
    return expected


# -- load_model(storage_dtype="float16")'s reference --------------------------------------------------
# The weights kerasgl stores as halves (docs/float16.md): the rest (biases, normalisation
# parameters, depthwise kernels) stay float32.
HALF_WEIGHTS = ("kernel", "pointwise_kernel", "embeddings", "reverse_embeddings")


def _weights_rounded_by_kerasgl(model):
    """(variable, its float32 value) for every Keras weight kerasgl stores as halves."""
    found = []
    for layer in model._flatten_layers(include_self=False):
        if isinstance(layer, (keras.layers.DepthwiseConv1D, keras.layers.DepthwiseConv2D)):
            continue                          # depthwise kernels stay float32
        for var in layer.weights:
            if var.path.rsplit("/", 1)[-1] in HALF_WEIGHTS:
                found.append((var, np.array(var.numpy())))
    return found


@contextlib.contextmanager
def rounded_to_half(model):
    """Inside: the Keras model's weights that kerasgl stores as halves, rounded to float16."""
    saved = _weights_rounded_by_kerasgl(model)
    for var, value in saved:
        var.assign(value.astype(np.float16).astype(np.float32))
    try:
        yield
    finally:
        for var, value in saved:
            var.assign(value)


def answers_with_half_weights(model, x):
    """(Keras's answer for x, its answer with the weights kerasgl stores as halves rounded to
    float16): the reference of load_model(storage_dtype="float16") and the float32 answer it
    must differ from (else the option was ignored)."""
    float32_answer = model.predict(x, verbose=0)
    with rounded_to_half(model):
        return float32_answer, model.predict(x, verbose=0)


# -- load_model(activation_dtype="float16")'s reference -----------------------------------------------
def _to_half(value):
    """A float32 array rounded to the nearest float16 (ties to even, numpy's cast), as float32;
    anything else (ints, bools) as it is."""
    array = np.asarray(value)
    if array.dtype == np.float32:
        return array.astype(np.float16).astype(np.float32)
    return array


def _run_rounding_layer_outputs(model, inputs):
    """model (Functional or Sequential) run layer by layer on `inputs` (its flat list), each
    layer's or op's outputs rounded to float16 before the next reads them; a model nested as a
    layer is run the same way inside. Returns the flat list of outputs."""
    functional = getattr(model, "_functional", None) or model      # a Sequential's graph

    def operation_fn(operation):
        def call(*args, **kwargs):
            if isinstance(operation, keras.Model) and not kwargs and len(args) == 1:
                outputs = _run_rounding_layer_outputs(operation, as_list(args[0]))
                outputs = outputs if len(outputs) > 1 else outputs[0]
            else:
                outputs = operation(*args, **kwargs)
            return keras.tree.map_structure(_to_half, outputs)
        return call

    outputs = functional._run_through_graph(list(inputs), operation_fn=operation_fn)
    return [np.asarray(o) for o in keras.tree.flatten(outputs)]


def answers_with_half_activations(model, x):
    """Keras's answer for x with every float32 value passed between layers rounded to float16:
    the model run layer by layer (operation by operation, through nested models too), each
    output rounded to the nearest half before the next layer reads it; the model's inputs as
    given. The emulation of load_model(activation_dtype="float16"), as a list of outputs."""
    return _run_rounding_layer_outputs(model, [np.asarray(a) for a in as_list(x)])
