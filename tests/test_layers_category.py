"""CategoryEncoding and Discretization against Keras 3 (.keras and .h5): every output mode, inputs
of the ranks Keras takes, tokens out of range (Keras on JAX encodes them as nothing), weighted
counts, values on, between and beyond the bin boundaries, NaN and infinities; and the options
kerasgl refuses at load."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg
from kerasgl.layers.preprocessing.category import CategoryEncoding, Discretization
from kerasgl.saving.spec import LayerSpec

L = keras.layers
BOUNDS = [-1.0, -0.25, 0.0, 0.5, 0.5, 2.0]


def tokens(shape, num_tokens, seed=3):
    """int32 tokens of `shape`, a few of them out of range on either side (-2 .. num_tokens + 1)."""
    return np.random.default_rng(seed).integers(-2, num_tokens + 2, size=shape).astype(np.int32)


def values(shape, seed=4):
    """float32 values around BOUNDS, with each boundary itself, NaN and both infinities in."""
    data = np.random.default_rng(seed).uniform(-3, 3, size=shape).astype(np.float32).reshape(-1)
    special = np.array(BOUNDS + [np.nan, np.inf, -np.inf, 0.1], np.float32)
    data[:special.size] = special[:data.size]
    return data.reshape(shape)


def model_of(layer, shape, dtype, name):
    inputs = keras.Input(shape, dtype=dtype)
    return keras.Model(inputs, layer(inputs), name=name)


def saved(model, tmp_path):
    path = str(tmp_path / f"{model.name}.keras")
    model.save(path)
    return path


# -- CategoryEncoding ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode,shape", [
    ("one_hot", ()), ("one_hot", (1,)), ("one_hot", (5,)),
    ("multi_hot", (1,)), ("multi_hot", (6,)), ("count", (1,)), ("count", (7,)),
])
def test_category_encoding(mode, shape, tmp_path):
    model = model_of(L.CategoryEncoding(num_tokens=6, output_mode=mode), shape, "int32",
                     f"ce_{mode}")
    assert_matches_keras(model, tmp_path, inputs=[tokens((5,) + shape, 6)])


def test_category_encoding_after_other_layers(tmp_path):
    """Tokens computed in the model (an argmax), encoded, and fed on to a Dense layer."""
    inputs = keras.Input((4, 3))
    ids = keras.ops.argmax(inputs, axis=-1)
    counts = L.CategoryEncoding(num_tokens=3, output_mode="count")(ids)
    model = keras.Model(inputs, L.Dense(2)(counts), name="ce_argmax")
    assert_matches_keras(model, tmp_path)


def test_weighted_counts(tmp_path):
    ids, weights = keras.Input((5,), dtype="int32"), keras.Input((5,))
    counts = L.CategoryEncoding(num_tokens=4, output_mode="count")(ids, count_weights=weights)
    model = keras.Model([ids, weights], counts, name="ce_weighted")
    data = np.random.default_rng(6).uniform(-2, 2, size=(3, 5)).astype(np.float32)
    data[0, 1], data[1, 2] = np.inf, np.nan     # they reach their own token's count only
    assert_matches_keras(model, tmp_path, inputs=[tokens((3, 5), 4), data])


def test_many_tokens_and_batches(tmp_path):
    model = model_of(L.CategoryEncoding(num_tokens=300, output_mode="count"), (40,), "int32",
                     "ce_many")
    assert_matches_keras(model, tmp_path, inputs=[tokens((70, 40), 300)], batch_size=32)


def test_category_encoding_of_a_single_token(tmp_path):
    model = model_of(L.CategoryEncoding(num_tokens=1, output_mode="multi_hot"), (3,), "int32",
                     "ce_one_token")
    assert_matches_keras(model, tmp_path, inputs=[tokens((4, 3), 1)])


# -- Discretization -----------------------------------------------------------------------------
@pytest.mark.parametrize("mode,shape", [
    ("int", (3,)), ("int", (2, 5)), ("one_hot", (1,)), ("one_hot", (4,)),
    ("multi_hot", (4,)), ("count", (5,)), ("count", (3, 2)), ("multi_hot", (3, 2)),
])
def test_discretization(mode, shape, tmp_path):
    model = model_of(L.Discretization(bin_boundaries=BOUNDS, output_mode=mode), shape, "float32",
                     f"disc_{mode}")
    expected = assert_matches_keras(model, tmp_path, inputs=[values((4,) + shape)])
    if mode == "int":
        with kg.load_model(saved(model, tmp_path)) as loaded:
            assert loaded.predict(values((4,) + shape), verbose=0).dtype == np.int32
        assert expected[0].dtype == np.int32


def test_discretization_of_integer_inputs(tmp_path):
    layer = L.Discretization(bin_boundaries=[0.0, 3.0, 7.5])
    model = model_of(layer, (6,), "int32", "disc_ints")
    assert_matches_keras(model, tmp_path, inputs=[tokens((3, 6), 9)])


def test_discretization_after_adapt(tmp_path):
    """An adapted layer's config holds num_bins and the bin_boundaries adapt found."""
    layer = L.Discretization(num_bins=5)
    # adapt()'s own steps: adapt() itself first asks whether its data is a tf.data.Dataset,
    # which needs TensorFlow.
    layer.update_state(np.random.default_rng(5).normal(size=(200, 1)).astype(np.float32))
    layer.finalize_state()
    assert len(layer.bin_boundaries) == 4
    model = model_of(layer, (4,), "float32", "disc_adapted")
    assert_matches_keras(model, tmp_path, inputs=[values((6, 4))])


@pytest.mark.parametrize("mode", ["int", "one_hot", "count"])
def test_discretization_without_boundaries_has_one_bin(mode, tmp_path):
    model = model_of(L.Discretization(bin_boundaries=[], output_mode=mode), (3,), "float32",
                     "disc_one_bin")
    assert_matches_keras(model, tmp_path, inputs=[values((2, 3))])


def test_discretization_with_many_boundaries(tmp_path):
    bounds = sorted(np.random.default_rng(7).normal(size=100).tolist())
    model = model_of(L.Discretization(bin_boundaries=bounds), (40,), "float32", "disc_many")
    assert_matches_keras(model, tmp_path, inputs=[values((70, 40))], batch_size=32)


def test_discretization_into_category_encoding(tmp_path):
    inputs = keras.Input((5,))
    bins = L.Discretization(bin_boundaries=[-0.5, 0.0, 0.5])(inputs)
    encoded = L.CategoryEncoding(num_tokens=4, output_mode="count")(bins)
    model = keras.Model(inputs, encoded, name="disc_ce")
    assert_matches_keras(model, tmp_path, inputs=[values((3, 5))])


def test_repeated_predicts_replay_the_same_answers(tmp_path):
    """Later predicts run from an execution plan: each still matches Keras on its own data."""
    inputs = keras.Input((6,), dtype="int32")
    hot = L.CategoryEncoding(num_tokens=5, output_mode="multi_hot")(inputs)
    bins = L.Discretization(bin_boundaries=[0.5, 1.5], output_mode="count")(hot)
    model = keras.Model(inputs, [hot, bins], name="cat_replay")
    with kg.load_model(saved(model, tmp_path)) as loaded:
        for seed in range(4):
            data = tokens((3, 6), 5, seed=seed)
            for ours, theirs in zip(loaded.predict(data, verbose=0),
                                    model.predict(data, verbose=0)):
                np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=1e-4)
        assert [info.status for info in loaded.plan_info()] == ["planned"]


def test_a_half_precision_policy_gives_the_same_one_hot(tmp_path):
    layer = L.CategoryEncoding(num_tokens=5, output_mode="one_hot", dtype="mixed_float16")
    model = model_of(layer, (3,), "int32", "ce_mixed")
    assert_matches_keras(model, tmp_path, inputs=[tokens((4, 3), 5)])


# -- refused at load ----------------------------------------------------------------------------
def _refused(model, tmp_path, match):
    with pytest.raises(kg.UnsupportedLayerError, match=match):
        kg.load_model(saved(model, tmp_path))


@pytest.mark.parametrize("mode", ["multi_hot", "count"])
def test_multi_hot_and_count_of_a_rank_1_input_are_refused(mode, tmp_path):
    model = model_of(L.CategoryEncoding(num_tokens=4, output_mode=mode), (), "int32", "ce_rank1")
    _refused(model, tmp_path, "rank-1 input")


def test_category_encoding_of_rank_3_inputs_is_refused(tmp_path):
    model = model_of(L.CategoryEncoding(num_tokens=4, output_mode="one_hot"), (2, 3), "int32",
                     "ce_rank3")
    _refused(model, tmp_path, "rank 3")


def test_category_encoding_of_float_inputs_is_refused(tmp_path):
    model = model_of(L.CategoryEncoding(num_tokens=4, output_mode="one_hot"), (3,), "float32",
                     "ce_float")
    _refused(model, tmp_path, "float32 input")


def test_count_weights_outside_count_mode_are_refused(tmp_path):
    ids, weights = keras.Input((3,), dtype="int32"), keras.Input((3,))
    counts = L.CategoryEncoding(num_tokens=4, output_mode="multi_hot")(ids, count_weights=weights)
    _refused(keras.Model([ids, weights], counts, name="ce_weights"), tmp_path, "count_weights")


def test_an_integer_dtype_policy_is_refused(tmp_path):
    layer = L.CategoryEncoding(num_tokens=4, output_mode="multi_hot", dtype="int32")
    _refused(model_of(layer, (3,), "int32", "ce_int_dtype"), tmp_path, "dtype='int32'")


def test_sparse_outputs_are_refused(tmp_path):
    layer = L.Discretization(bin_boundaries=[0.0, 1.0], output_mode="one_hot", sparse=True)
    _refused(model_of(layer, (3,), "float32", "disc_sparse"), tmp_path, "sparse=True")
    # Keras 3 leaves `sparse` out of CategoryEncoding's config; a file that has it is refused.
    spec = LayerSpec("CategoryEncoding", "ce", {"num_tokens": 3, "output_mode": "one_hot",
                                                "sparse": True, "dtype": "float32"})
    with pytest.raises(kg.UnsupportedLayerError, match="sparse=True"):
        CategoryEncoding(spec)


def test_an_unadapted_discretization_is_refused(tmp_path):
    model = model_of(L.Discretization(num_bins=4), (3,), "float32", "disc_unadapted")
    _refused(model, tmp_path, "without bin_boundaries")


def test_boundaries_out_of_order_are_refused(tmp_path):
    model = model_of(L.Discretization(bin_boundaries=[1.0, 0.0]), (3,), "float32", "disc_order")
    _refused(model, tmp_path, "increasing order")


def test_a_discretization_config_without_a_list_of_numbers_is_a_file_error():
    spec = LayerSpec("Discretization", "d", {"bin_boundaries": "abc", "output_mode": "int"})
    with pytest.raises(kg.ModelFileError, match="bin_boundaries"):
        Discretization(spec)
