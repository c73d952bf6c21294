"""Masks against live Keras 3: Embedding(mask_zero=True) and Masking, propagated to recurrent
layers, Bidirectional, TimeDistributed, GlobalAveragePooling1D and merges, in Sequential models
(propagated at run time) and functional models (mask= recorded in the config)."""
import os

import numpy as np
import pytest

import kerasgl as kg
from keras_ref import assert_matches_keras, keras

L = keras.layers


def _tokens():
    tokens = np.random.default_rng(0).integers(1, 9, size=(4, 6)).astype("int32")
    tokens[0, :2] = 0          # leading padding
    tokens[1, 4:] = 0          # trailing padding
    tokens[2, 1::2] = 0        # holes
    tokens[3, :] = 0           # nothing kept
    return tokens


def _floats():
    x = np.random.default_rng(1).uniform(-1, 1, (4, 6, 3)).astype("float32")
    x[0, :2] = 0.5
    x[1, 3] = 0.5
    x[3, :] = 0.5
    return x


def _embedded(*layers):
    return keras.Sequential([keras.Input((6,), dtype="int32"), L.Embedding(9, 3, mask_zero=True),
                             *layers])


RNNS = {
    "simple": lambda **kw: L.SimpleRNN(4, **kw),
    "lstm": lambda **kw: L.LSTM(4, **kw),
    "gru": lambda **kw: L.GRU(4, **kw),
    "gru_reset_before": lambda **kw: L.GRU(4, reset_after=False, **kw),
}
OPTIONS = [{}, {"return_sequences": True}, {"go_backwards": True, "return_sequences": True},
           {"unroll": True, "return_sequences": True}, {"go_backwards": True, "unroll": True}]


@pytest.mark.parametrize("kind", list(RNNS))
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(sorted(o)) or "default")
def test_masked_recurrent_layers(tmp_path, kind, options):
    assert_matches_keras(_embedded(RNNS[kind](**options)), tmp_path, inputs=[_tokens()])


def test_masking_layer_into_lstm_and_pooling(tmp_path):
    model = keras.Sequential([keras.Input((6, 3)), L.Masking(0.5),
                              L.LSTM(4, return_sequences=True), L.GlobalAveragePooling1D()])
    assert_matches_keras(model, tmp_path, inputs=[_floats()])


def test_masking_layer_output_zeroes_masked_steps(tmp_path):
    model = keras.Sequential([keras.Input((6, 3)), L.Masking(0.5), L.Dense(2)])
    assert_matches_keras(model, tmp_path, inputs=[_floats()])


def test_mask_through_pass_through_layers_and_time_distributed(tmp_path):
    model = _embedded(L.Dense(5, activation="relu"), L.Dropout(0.3), L.LayerNormalization(),
                      L.TimeDistributed(L.Dense(3)), L.GRU(2, return_sequences=True),
                      L.GlobalAveragePooling1D())
    assert_matches_keras(model, tmp_path, inputs=[_tokens()[:3]])


@pytest.mark.parametrize("merge_mode", ["concat", "sum", None])
def test_masked_bidirectional(tmp_path, merge_mode):
    tokens = keras.Input((6,), dtype="int32")
    embedded = L.Embedding(9, 3, mask_zero=True)(tokens)
    outputs = L.Bidirectional(L.LSTM(3, return_sequences=True), merge_mode=merge_mode)(embedded)
    model = keras.Model(tokens, outputs)
    assert_matches_keras(model, tmp_path, inputs=[_tokens()])
    sequential = _embedded(L.Bidirectional(L.GRU(3, return_sequences=True)), L.LSTM(2))
    assert_matches_keras(sequential, tmp_path, inputs=[_tokens()])


def test_functional_masks_through_merges(tmp_path):
    tokens, floats = keras.Input((6,), dtype="int32"), keras.Input((6, 3))
    embedded = L.Embedding(9, 3, mask_zero=True)(tokens)
    masked = L.Masking(0.5)(floats)
    added = L.Add()([embedded, masked])
    joined = L.Concatenate()([embedded, L.LSTM(3, return_sequences=True)(masked)])
    outputs = [L.SimpleRNN(2)(added), L.Bidirectional(L.GRU(2))(joined)]
    model = keras.Model([tokens, floats], outputs)
    # Keras's legacy .h5 drops op modules; its Concatenate mask needs ZerosLike, an op with a
    # dtype argument that the reader must still tell from a layer: both formats are checked.
    assert_matches_keras(model, tmp_path, inputs=[_tokens(), _floats()])


def test_merge_of_masked_and_unmasked_inputs_drops_the_mask(tmp_path):
    tokens = keras.Input((6,), dtype="int32")
    a = L.Embedding(9, 3, mask_zero=True)(tokens)
    b = L.Embedding(9, 3)(tokens)
    model = keras.Model(tokens, L.LSTM(2)(L.Add()([a, b])))
    assert_matches_keras(model, tmp_path, inputs=[_tokens()])


def test_masked_softmax(tmp_path):
    # Keras 3 broadcasts the (batch, time) mask to the inputs as numpy does: with a batch of one
    # and as many features as steps, it masks features (a fully masked row gives zeros).
    tokens = _tokens()[:1]
    tokens[0, 2:] = 0
    sequential = keras.Sequential([keras.Input((6,), dtype="int32"),
                                   L.Embedding(9, 6, mask_zero=True), L.Softmax(),
                                   L.GlobalAveragePooling1D(keepdims=True)])
    assert_matches_keras(sequential, tmp_path, inputs=[tokens])
    ids = keras.Input((6,), dtype="int32")
    scores = L.Softmax(axis=1)(L.Embedding(9, 6, mask_zero=True)(ids))
    assert_matches_keras(keras.Model(ids, [scores, L.LSTM(2)(scores)]), tmp_path, inputs=[tokens])


def test_masked_softmax_whose_mask_does_not_broadcast_is_refused(tmp_path):
    model = _embedded(L.Softmax())            # mask (batch, 6) against inputs (batch, 6, 3)
    path = os.path.join(tmp_path, "mask_softmax.keras")
    model.save(path)
    with pytest.raises(ValueError):           # Keras cannot run it either
        model.predict(_tokens(), verbose=0)
    before = kg.memory().num_tensors
    with pytest.raises(kg.UnsupportedLayerError, match=r"\(Softmax\): is called with a mask"):
        kg.load_model(path)
    assert kg.memory().num_tensors == before


def test_lstm_with_initial_state_gets_no_implicit_mask(tmp_path):
    # Keras 3 fills `mask` in only for calls with one tensor argument: with initial_state the
    # LSTM runs unmasked, and its sequence output still carries the mask to the next LSTM.
    tokens, h, c = keras.Input((6,), dtype="int32"), keras.Input((3,)), keras.Input((3,))
    embedded = L.Embedding(9, 3, mask_zero=True)(tokens)
    sequences = L.LSTM(3, return_sequences=True)(embedded, initial_state=[h, c])
    model = keras.Model([tokens, h, c], [sequences, L.GRU(2)(sequences)])
    rng = np.random.default_rng(3)
    states = [rng.uniform(-1, 1, (4, 3)).astype("float32") for _ in range(2)]
    assert_matches_keras(model, tmp_path, inputs=[_tokens(), *states])


def test_mask_dropped_by_layers_without_masking(tmp_path):
    # Conv1D does not support masking: Keras drops the mask, the LSTM after it sees none.
    model = _embedded(L.Conv1D(3, 2, padding="same"), L.LSTM(2))
    assert_matches_keras(model, tmp_path, inputs=[_tokens()])


def _refused(tmp_path, model, match):
    path = os.path.join(tmp_path, f"{model.name}.keras")
    model.save(path)
    before = kg.memory().num_tensors
    with pytest.raises(kg.UnsupportedLayerError, match=match):
        kg.load_model(path)
    assert kg.memory().num_tensors == before


def test_mask_out_of_a_nested_model_is_refused(tmp_path):
    # Keras passes on the masks its inner layers set on a nested model's outputs.
    tokens = keras.Input((6,), dtype="int32")
    inner = keras.Model(tokens, L.Dense(3)(L.Embedding(9, 4, mask_zero=True)(tokens)), name="inner")
    outer_tokens = keras.Input((6,), dtype="int32")
    model = keras.Model(outer_tokens, L.GlobalAveragePooling1D()(inner(outer_tokens)))
    _refused(tmp_path, model, "nested model 'inner' carries a mask")
    # Unused by anything that reads masks: runs.
    plain = keras.Model(outer_tokens, L.Flatten()(inner(outer_tokens)))
    assert_matches_keras(plain, tmp_path, inputs=[_tokens()], formats=(".keras",))


def test_time_distributed_handing_step_masks_to_its_layer_is_refused(tmp_path):
    tokens = keras.Input((3, 5), dtype="int32")
    embedded = L.Embedding(9, 4, mask_zero=True)(tokens)
    model = keras.Model(tokens, L.TimeDistributed(L.LSTM(2))(embedded))
    _refused(tmp_path, model, "TimeDistributed")


# ---------------------------------------------------------------------------- declarations
def test_every_registered_layer_declares_what_it_does_with_a_mask():
    from kerasgl.layers import LAYER_CLASSES
    from kerasgl.layers.base import MASK_BEHAVIOURS
    undeclared = sorted(n for n, c in LAYER_CLASSES.items() if c.mask_behaviour not in MASK_BEHAVIOURS)
    assert not undeclared, f"layer classes without a mask_behaviour: {undeclared}"
    consumers = [n for n, c in LAYER_CLASSES.items() if c.mask_behaviour == "consumes"]
    assert all(LAYER_CLASSES[n].mask_argument in ("mask", "mask_list", "per_argument")
               for n in consumers)


@pytest.fixture
def undeclared_flatten(monkeypatch):
    """Flatten's class as one that declares nothing about masks, for this test only."""
    from kerasgl.layers import LAYER_CLASSES
    original = LAYER_CLASSES["Flatten"]
    monkeypatch.setitem(LAYER_CLASSES, "Flatten",
                        type("UndeclaredFlatten", (original,), {"mask_behaviour": None}))


def test_mask_reaching_a_layer_that_declares_nothing_is_refused(tmp_path, undeclared_flatten):
    # Keras's Flatten drops the mask; a class that does not say so is refused, never run.
    model = keras.Model(*_flatten_after_embedding(mask_zero=True), name="masked")
    _refused(tmp_path, model, r"'flatten' \(Flatten\) receives the mask made by layer 'emb'")
    # Without a mask the same class runs as Keras does.
    plain = keras.Model(*_flatten_after_embedding(mask_zero=False), name="plain")
    assert_matches_keras(plain, tmp_path, inputs=[_tokens()], formats=(".keras",))


def _flatten_after_embedding(mask_zero: bool):
    tokens = keras.Input((6,), dtype="int32")
    embedded = L.Embedding(9, 3, mask_zero=mask_zero, name="emb")(tokens)
    return tokens, L.Dense(2)(L.Flatten(name="flatten")(embedded))
