"""bool and int32 through keras.ops graphs against live Keras 3 (JAX): comparisons, logical ops,
where, int32 arithmetic, casts, reductions and the float classifications, with bool / int32
inputs, Python-number operands and broadcasting; predict returns Keras's dtypes (assert_close
checks them). Each family is one multi-output model, saved as .keras and .h5."""
import numpy as np
import pytest

import kerasgl as kg
from kerasgl.layers.typed_shapes import binary_result
from keras_ref import assert_matches_keras, keras

ops = keras.ops


def _inputs():
    f = keras.Input((3, 4), name="f")
    i = keras.Input((3, 4), dtype="int32", name="i")
    b = keras.Input((1, 4), dtype="bool", name="b")
    return f, i, b


def _data(batch=2, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.integers(-3, 4, size=(batch, 3, 4)).astype("float32")
    f[0, 0] += 0.5                       # some non-integers
    i = rng.integers(-4, 5, size=(batch, 3, 4)).astype("int32")
    b = rng.random((batch, 1, 4)) < 0.5
    return [f, i, b]


def test_comparisons(tmp_path):
    f, i, b = _inputs()
    outputs = []
    for op in (ops.greater, ops.greater_equal, ops.less, ops.less_equal, ops.equal,
               ops.not_equal):
        outputs += [op(f, i), op(i, i[:, :1]), op(i, 2), op(2.5, i), op(f, 0.5), op(b, i),
                    op(b, True)]
    outputs += [ops.equal(b, b[:, :, ::-1]), ops.not_equal(f, f[:, ::-1, :])]
    model = keras.Model([f, i, b], outputs)
    expected = assert_matches_keras(model, tmp_path, inputs=_data())
    assert all(e.dtype == np.bool_ for e in expected)


def test_logical_ops_and_any_all(tmp_path):
    f, i, b = _inputs()
    outputs = [ops.logical_and(f, i), ops.logical_or(i, b), ops.logical_xor(b, f),
               ops.logical_and(b, True), ops.logical_or(f, 0.0), ops.logical_xor(i, 3),
               ops.logical_not(f), ops.logical_not(i), ops.logical_not(b),
               ops.any(f, axis=1), ops.all(i, axis=-1), ops.any(b, axis=1, keepdims=True),
               ops.all(ops.greater(f, -2.0), axis=(1, 2)), ops.any(i, axis=(1, 2))]
    model = keras.Model([f, i, b], outputs)
    assert_matches_keras(model, tmp_path, inputs=_data())


def test_where(tmp_path):
    f, i, b = _inputs()
    cond = ops.greater(f, 0.0)
    outputs = [ops.where(cond, f, i), ops.where(cond, i, i * 2), ops.where(b, i, 7),
               ops.where(b, f, 1), ops.where(cond, i, 1.5), ops.where(b, 1, 2.0),
               ops.where(b, b, b[:, :, ::-1]), ops.where(b, b, 1), ops.where(i, f, -1.0),
               ops.where(f, 3, i)]
    model = keras.Model([f, i, b], outputs)
    assert_matches_keras(model, tmp_path, inputs=_data())


def test_int32_arithmetic(tmp_path):
    f, i, b = _inputs()
    j = i[:, ::-1, :]              # zeros and negative divisors
    outputs = [i + j, i - 3, 5 * i, ops.maximum(i, j), ops.minimum(i, -1),
               ops.floor_divide(i, j), ops.mod(i, j), ops.floor_divide(7, i), ops.mod(i, -3),
               i + 2.5, i * f, i / j, ops.true_divide(i, 2), i / b, b * f, b + b, b * True,
               ops.maximum(b, b[:, :, ::-1]), b + 3, ops.mod(b, b), f // 2.0, ops.mod(f, -1.5),
               f // 0.1, ops.mod(f, 0.3), ops.floor_divide(f, f[:, ::-1, :]),
               ops.negative(i), ops.absolute(j), ops.square(i), ops.sign(j), ops.abs(b),
               ops.square(b), ops.power(i, 2.0), ops.subtract(b, i),
               ops.negative(i - j), ops.relu(i * 3),      # an op fused with what follows
               ops.relu(j), ops.exp(i - j), ops.sqrt(ops.absolute(j)), ops.tanh(b),
               i * np.arange(4), ops.add(f, np.arange(4)),    # array constants
               ops.logical_and(b, np.array([True, False, True, False]))]
    model = keras.Model([f, i, b], outputs)
    assert_matches_keras(model, tmp_path, inputs=_data())


def test_casts(tmp_path):
    f, i, b = _inputs()
    outputs = [ops.cast(f * 1.7, "int32"), ops.cast(f, "bool"), ops.cast(i, "float32"),
               ops.cast(i, "bool"), ops.cast(b, "int32"), ops.cast(b, "float32"),
               ops.cast(f * 1e9, "int32"), ops.cast(f, "int64"), ops.cast(i, "float64"),
               ops.cast(ops.cast(f, "bool"), "float32") * f]
    model = keras.Model([f, i, b], outputs)
    assert_matches_keras(model, tmp_path, inputs=_data())


def test_reductions_of_int_and_bool(tmp_path):
    f, i, b = _inputs()
    outputs = [ops.sum(i, axis=1), ops.sum(b, axis=-1), ops.max(i, axis=2), ops.min(b, axis=1),
               ops.mean(i, axis=1), ops.mean(b, axis=1), ops.sum(ops.greater(f, 0.0), axis=1),
               ops.argmax(i, axis=1), ops.argmin(b, axis=-1)]
    model = keras.Model([f, i, b], outputs)
    assert_matches_keras(model, tmp_path, inputs=_data())


def test_int32_reductions_are_exact_beyond_float32(tmp_path):
    """Sums, maxima and minima of int32 values near 2**31, where float32 would lose the low
    bits (and a sum that wraps around, as XLA's int32 sums do)."""
    i = keras.Input((5, 3), dtype="int32", name="i")
    model = keras.Model(i, [ops.sum(i, axis=1), ops.max(i, axis=-1), ops.min(i, axis=(1, 2)),
                            ops.sum(i, axis=(1, 2))], name="big_ints")
    values = np.random.default_rng(3).integers(2 ** 28, 2 ** 29 + 7, size=(2, 5, 3))
    values[1, :, 0] = [2 ** 31 - 1, 2 ** 31 - 3, 5, -7, 1]     # wraps
    assert_matches_keras(model, tmp_path, inputs=[values.astype("int32")])


def test_float_classifications(tmp_path):
    f, i, b = _inputs()
    outputs = []
    for op in (ops.isnan, ops.isinf, ops.isfinite, ops.isposinf, ops.isneginf, ops.signbit):
        outputs += [op(f), op(i)]
    outputs += [ops.signbit(b), ops.isnan(b)]
    model = keras.Model([f, i, b], outputs)
    data = _data()
    data[0][0, 0, :] = [np.nan, np.inf, -np.inf, -0.0]
    data[0][1, 1, :2] = [-np.nan, 0.0]
    assert_matches_keras(model, tmp_path, inputs=data)


def test_bool_mask_meets_floats(tmp_path):
    """A mask computed with keras.ops (bool) times floats, and handed to a layer."""
    tokens = keras.Input((5,), dtype="int32")
    x = keras.layers.Embedding(10, 4)(tokens)
    mask = ops.not_equal(tokens, 0)
    weighted = x * ops.expand_dims(mask, -1)
    pooled = keras.layers.GlobalAveragePooling1D()(x, mask=mask)
    model = keras.Model(tokens, [weighted, pooled, ops.sum(mask, axis=1)])
    ids = np.array([[1, 2, 0, 0, 3], [0, 0, 0, 4, 5]], "int32")
    assert_matches_keras(model, tmp_path, inputs=[ids])


def test_bool_tensors_and_predict_dtypes(tmp_path):
    b = keras.Input((3,), dtype="bool")
    model = keras.Model(b, [ops.logical_not(b), ops.cast(b, "int32"), ops.cast(b, "float32")])
    path = str(tmp_path / "bools.keras")
    model.save(path)
    with kg.load_model(path) as loaded:
        assert loaded.inputs[0].dtype == "bool"
        feeds = [np.array([[True, False, True]]), np.array([[2.0, 0.0, -1.0]])] * 3
        for feed in feeds:                # recorded, then replayed by a plan (plans/)
            expected = model.predict(feed, verbose=0)
            actual = loaded.predict(feed, verbose=0)
            for a, e in zip(actual, expected):
                assert a.dtype == e.dtype and np.array_equal(a, e)
        assert loaded.plan_info()[0].status == "planned", loaded.plan_info()
        on_gpu = kg.tensor(np.array([[False, True, True]]))
        assert on_gpu.dtype == "bool" and on_gpu.numpy().dtype == np.bool_
        outs = loaded.predict(on_gpu, verbose=0)
        assert [o.dtype for o in outs] == ["bool", "int32", "float32"]
        assert [o.numpy().dtype for o in outs] == [np.bool_, np.int32, np.float32]
        for out in outs:
            out.dispose()
        on_gpu.dispose()


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "floor_divide", "mod",
                                "maximum", "minimum", "power"])
def test_binary_result_types_match_keras(op):
    """op_dtypes.binary_result against keras.ops on symbolic tensors, for every pair of
    kerasgl dtypes and Python numbers (no GPU)."""
    names = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div",
             "floor_divide": "floordiv", "mod": "mod", "maximum": "maximum",
             "minimum": "minimum", "power": "pow"}
    tensors = {d: keras.KerasTensor((2,), dtype=d) for d in ("float32", "int32", "bool")}
    numbers = {"int32": 2, "float32": 2.5, "bool": True}
    for a, x in tensors.items():
        for b, y in list(tensors.items()) + list(numbers.items()):
            try:
                ours = binary_result(names[op], a, b)[0]
            except ValueError:
                continue             # refused at load (tested below)
            assert ours == getattr(ops, op)(x, y).dtype, (op, a, b)
    assert binary_result("add", "bool", "bool")[0] == keras.backend.result_type("bool", "bool")


def _refused(tmp_path, outputs, inputs, word):
    path = str(tmp_path / "refused.keras")
    keras.Model(inputs, outputs).save(path)
    with pytest.raises(kg.UnsupportedLayerError, match=word):
        kg.load_model(path)


@pytest.mark.parametrize("case", ["float16", "uint8", "bool_subtract", "int_power",
                                  "bool_negative", "bool_floor_divide", "one_arg_where"])
def test_refused_at_load(tmp_path, case):
    f, i, b = _inputs()
    made = {"float16": lambda: (ops.cast(f, "float16"), "float16"),
            "uint8": lambda: (ops.cast(i, "uint8"), "uint8"),
            "bool_subtract": lambda: (ops.subtract(b, b), "two bools"),
            "int_power": lambda: (ops.power(i, 2), "integer power"),
            "bool_negative": lambda: (ops.negative(b), "negative of a bool"),
            "bool_floor_divide": lambda: (ops.floor_divide(b, b), "two bools"),
            "one_arg_where": lambda: (ops.where(b), "one argument")}
    output, word = made[case]()           # every case is a graph Keras builds
    _refused(tmp_path, output, [f, i, b], word)
