"""Whole Transformer models against Keras 3 (.keras and .h5), within 1e-4: an encoder block
(MultiHeadAttention, Add, LayerNormalization, Dense feed-forward, Dropout) over token embeddings
with a padding attention mask and a classifier head, and an encoder-decoder whose decoder uses
causal self-attention and cross-attention on the encoder's output."""
import numpy as np

from keras_ref import assert_matches_keras, keras

L = keras.layers
SEQ, DIM, HEADS, VOCAB = 10, 16, 4, 20


def encoder_block(x, attention_mask=None, name="enc"):
    attended = L.MultiHeadAttention(HEADS, DIM // HEADS, dropout=0.1, name=f"{name}_mha")(
        x, x, attention_mask=attention_mask)
    attended = L.Dropout(0.1)(attended)
    x = L.LayerNormalization(epsilon=1e-6)(L.Add()([x, attended]))
    hidden = L.Dense(2 * DIM, activation="relu")(x)
    hidden = L.Dropout(0.1)(L.Dense(DIM)(hidden))
    return L.LayerNormalization(epsilon=1e-6)(L.Add()([x, hidden]))


def decoder_block(x, memory, name="dec"):
    attended = L.MultiHeadAttention(HEADS, DIM // HEADS, name=f"{name}_self")(
        x, x, use_causal_mask=True)
    x = L.LayerNormalization()(L.Add()([x, attended]))
    crossed = L.MultiHeadAttention(HEADS, DIM // HEADS, name=f"{name}_cross")(x, memory, key=memory)
    x = L.LayerNormalization()(L.Add()([x, crossed]))
    hidden = L.Dense(DIM)(L.Dense(2 * DIM, activation="gelu")(x))
    return L.LayerNormalization()(L.Add()([x, hidden]))


def _tokens(rng, batch, length):
    return rng.integers(0, VOCAB, size=(batch, length)).astype("int32")


def test_encoder_classifier_with_padding_mask(tmp_path):
    tokens = keras.Input((SEQ,), dtype="int32")
    mask = keras.Input((SEQ, SEQ), dtype="bool")
    x = L.Embedding(VOCAB, DIM)(tokens)
    x = encoder_block(x, attention_mask=mask, name="block1")
    x = encoder_block(x, attention_mask=mask, name="block2")
    pooled = L.GlobalAveragePooling1D()(x)
    probs = L.Dense(3, activation="softmax")(L.Dropout(0.2)(pooled))
    model = keras.Model([tokens, mask], [probs, x])

    rng = np.random.default_rng(11)
    ids = _tokens(rng, 3, SEQ)
    lengths = np.array([SEQ, 6, 1])
    valid = np.arange(SEQ)[None, :] < lengths[:, None]
    padding = valid[:, None, :] & np.ones((3, SEQ, 1), bool)   # every query sees valid keys only
    assert_matches_keras(model, tmp_path, inputs=[ids, padding])


def test_encoder_block_on_features(tmp_path):
    features = keras.Input((SEQ, DIM))
    model = keras.Model(features, encoder_block(features))
    assert_matches_keras(model, tmp_path)


def test_encoder_decoder_with_causal_self_attention(tmp_path):
    source = keras.Input((SEQ,), dtype="int32")
    target = keras.Input((SEQ - 3,), dtype="int32")
    memory = encoder_block(L.Embedding(VOCAB, DIM)(source))
    decoded = decoder_block(L.Embedding(VOCAB, DIM)(target), memory)
    logits = L.Dense(VOCAB, activation="softmax")(decoded)
    model = keras.Model([source, target], logits)
    rng = np.random.default_rng(12)
    assert_matches_keras(model, tmp_path, inputs=[_tokens(rng, 2, SEQ), _tokens(rng, 2, SEQ - 3)])
