"""ReversibleEmbedding against Keras 3 (.keras and .h5): the forward lookup, the reverse logits
with tied and untied weights, logit_soft_cap, one layer called both ways (a language model's
embedding and head), and mask_zero on forward calls."""
import numpy as np
import pytest
import kerasgl as kg
from keras_ref import assert_matches_keras, keras

L = keras.layers


@pytest.mark.parametrize("kwargs", [
    dict(), dict(tie_weights=False), dict(logit_soft_cap=0.7),
    dict(tie_weights=False, logit_soft_cap=2.0),
])
def test_embedding_and_head(kwargs, tmp_path):
    ids = keras.Input((5,), dtype="int32")
    layer = L.ReversibleEmbedding(10, 6, **kwargs)
    hidden = L.Dense(6, activation="tanh")(layer(ids))
    logits = layer(hidden, reverse=True)
    model = keras.Model(ids, logits, name="rev_lm")
    assert_matches_keras(model, tmp_path)


@pytest.mark.parametrize("tie", [True, False])
def test_reverse_only(tie, tmp_path):
    inputs = keras.Input((3, 4))
    layer = L.ReversibleEmbedding(7, 4, tie_weights=tie, logit_soft_cap=0.5)
    model = keras.Model(inputs, layer(inputs, reverse=True), name="rev_only")
    assert_matches_keras(model, tmp_path)


def test_mask_zero_forward(tmp_path):
    ids = keras.Input((6,), dtype="int32")
    x = L.ReversibleEmbedding(10, 4, mask_zero=True)(ids)
    model = keras.Model(ids, L.GlobalAveragePooling1D()(x), name="rev_masked")
    data = np.array([[3, 1, 4, 0, 0, 0], [2, 7, 1, 8, 2, 0]], np.int32)
    assert_matches_keras(model, tmp_path, inputs=[data])


def test_mask_zero_with_a_reverse_call_is_refused(tmp_path):
    ids = keras.Input((5,), dtype="int32")
    layer = L.ReversibleEmbedding(10, 6, mask_zero=True)
    model = keras.Model(ids, layer(L.Dense(6)(layer(ids)), reverse=True))
    path = str(tmp_path / "rev_mask.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError, match="reverse"):
        kg.load_model(path)
