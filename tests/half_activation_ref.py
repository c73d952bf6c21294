"""A numpy reference of load_model(activation_dtype="float16") for the small Dense models the
plumbing tests (CLI, serving, Ray, worker) load: each layer's output rounded to the nearest half
before the next layer reads it, the model's output too (kerasgl hands it back as the float32
value of a half). The full emulation, for any model, is tests/keras_ref.py's."""
import numpy as np


def dense16_file(folder, output_name=None) -> tuple:
    """(model, path, x): the plumbing tests' small model (Dense 16 -> 12 relu -> 4, seed 5),
    saved as dense16.keras in `folder`, and 5 inputs of scale 3 (large enough that rounding
    weights or activations to halves moves the answer beyond float32's rounding)."""
    import os
    import keras
    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((16,), name="x"),
                              keras.layers.Dense(12, activation="relu"),
                              keras.layers.Dense(4, name=output_name)], name="dense16")
    path = os.path.join(str(folder), "dense16.keras")
    model.save(path)
    x = (np.random.default_rng(1).standard_normal((5, 16)) * 3).astype(np.float32)
    return model, path, x


def to_half(a) -> np.ndarray:
    """float32 values rounded to the nearest float16 (ties to even), as float32."""
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)


def is_half(a) -> bool:
    """Whether every value is exactly a float16 (what kerasgl's float16-activation outputs are,
    and float32 results almost never all are)."""
    a = np.asarray(a, np.float32)
    return bool(np.array_equal(a, to_half(a)))


def dense_answers_with_half_activations(model, x, half_weights: bool = False) -> tuple:
    """(the float32 answer, the answer with every layer's output rounded to float16) of a Keras
    Sequential of Dense layers (relu or linear activations), computed in float64. half_weights:
    the second with the kernels rounded to float16 too (storage_dtype="float16" as well)."""
    full = half = np.asarray(x, np.float64)
    for layer in model.layers:
        kernel, bias = (np.asarray(w, np.float64) for w in layer.get_weights())
        rounded = to_half(kernel).astype(np.float64) if half_weights else kernel
        activation = layer.get_config()["activation"]
        assert activation in ("relu", "linear"), activation

        def apply(h, w):
            y = h @ w + bias
            return np.maximum(y, 0.0) if activation == "relu" else y
        full = apply(full, kernel)
        half = to_half(apply(half, rounded)).astype(np.float64)
    return full.astype(np.float32), half.astype(np.float32)


def assert_half_activations(got, float32_answer, expected) -> None:
    """kerasgl's float16-activation answer: every value a half, each the emulation's or a
    neighbouring half (a sum landing next to a tie may round the other way; on llvmpipe these
    tests' answers equal the emulation's exactly), and not the float32 answer."""
    got = np.asarray(got, np.float32)
    assert is_half(got), "the outputs are not all float16 values: activations were float32"
    ulp = np.spacing(np.abs(np.asarray(expected, np.float16))).astype(np.float32)
    assert np.all(np.abs(got - expected) <= ulp), np.abs(got - expected).max()
    assert np.abs(got - float32_answer).max() > 0


def half_ulp(values):
    """The spacing of halves at each value's magnitude: 2^(e - 10) for 2^e <= |v| < 2^(e+1) in
    the normal range, 2^-24 below it (subnormals and zero)."""
    magnitude = np.abs(np.asarray(values, np.float64))
    exponent = np.floor(np.log2(np.maximum(magnitude, 2.0 ** -14)))
    return 2.0 ** (exponent - 10)


def spacings_off(got, expected) -> float:
    """max |got - expected| in spacings of halves at expected's largest magnitude."""
    expected = np.asarray(expected, np.float64)
    return float(np.abs(np.asarray(got, np.float64) - expected).max()
                 / half_ulp(np.abs(expected).max()))


def model_ulps() -> int:
    """How many spacings of halves at an output's largest magnitude kerasgl's float16 answer may
    differ from the emulation's (Keras layer by layer, each output rounded to a half): 2 where
    stores round to nearest (llvmpipe's policy and GPUs; measured 1 at most), 8 where they
    truncate (llvmpipe under the plain policy: measured 4 at most). tests/
    test_activations_float16.py's docstring says how they were measured."""
    from kerasgl.runtime import tuning
    return 2 if tuning.current().half_store_rounding else 8

