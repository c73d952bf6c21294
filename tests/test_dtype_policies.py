"""Models whose layers carry a 16-bit dtype policy (mixed_float16, float16, mixed_bfloat16):
kerasgl computes them in float32, says so in summary(), and matches the float32 model with the
same weights at the suite's tolerance. Keras's own 16-bit result is farther from that float32
model than kerasgl is (its rounding, not kerasgl's): the test measures both."""
import numpy as np
import pytest

from keras_ref import assert_close, keras

import kerasgl as kg


def _model(policy):
    layers = keras.layers
    x = keras.Input((8,), name="x")
    h = layers.Dense(16, activation="relu", dtype=policy, name="d1")(x)
    h = layers.LayerNormalization(dtype=policy, name="ln")(h)
    y = layers.Dense(4, dtype=policy, name="d2")(h)
    return keras.Model(x, y, name=f"policy_{policy}")


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16", "float16"])
def test_half_policies_run_in_float32_and_say_so(policy, tmp_path):
    half = _model(policy)
    full = _model("float32")
    rng = np.random.default_rng(4)
    for layer in half.layers:
        if layer.weights:
            values = [rng.normal(0, 0.5, w.shape).astype("float32") for w in layer.weights]
            layer.set_weights(values)
            # A float16 policy stores its variables in float16: the float32 twin gets those
            # rounded values, the ones the file holds.
            stored = [np.asarray(w, dtype="float32") for w in layer.get_weights()]
            full.get_layer(layer.name).set_weights(stored)
    x = rng.uniform(-1, 1, (6, 8)).astype("float32")
    path = str(tmp_path / "half.keras")
    half.save(path)
    reference = np.asarray(full.predict(x, verbose=0))
    keras_half = np.asarray(half.predict(x, verbose=0)).astype("float32")
    printed = []
    with kg.load_model(path) as model:
        model.summary(print_fn=printed.append)
        actual = model.predict(x, verbose=0)
    summary = "\n".join(printed)
    assert f"asks for {policy} in 3 layer(s)" in summary, summary
    assert "computes them in float32" in summary
    assert actual.dtype == np.float32
    assert_close(actual, reference, 1e-4, 1e-4)
    ours, theirs = np.abs(actual - reference).max(), np.abs(keras_half - reference).max()
    print(f"{policy}: kerasgl - float32 model {ours:.2e}, Keras {policy} - float32 model {theirs:.2e}")
    assert ours <= theirs, (ours, theirs)

