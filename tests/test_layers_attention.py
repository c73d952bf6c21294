"""Attention layers against Keras 3 (.keras and .h5): MultiHeadAttention over its options
(heads, dims, bias, output_shape, attention_axes, key, attention_mask, causal, sliding window,
gate, returned scores, both of Keras's masking code paths), Attention and AdditiveAttention, the
masks Keras propagates implicitly (handed to the layer's call as the graph will), and the ops
against numpy."""
import numpy as np
import pytest

from keras_ref import assert_close, assert_matches_keras, keras, randomize_weights

import kerasgl as kg
from kerasgl.ops import attention as attn_ops

L = keras.layers
RNG = np.random.default_rng(7)


def uniform(*shape):
    return RNG.uniform(-1, 1, shape).astype("float32")


def bool_mask(*shape, p=0.35, full_rows=True):
    """A random boolean mask whose first example has one fully masked row (the case where
    Keras's code paths differ)."""
    mask = RNG.uniform(size=shape) > p
    if full_rows:
        mask[(0,) * (len(shape) - 1)] = False
    return mask


# -------------------------------------------------------------------------------------------------
# MultiHeadAttention
# -------------------------------------------------------------------------------------------------
def _mha_model(q_shape, v_shape=None, k_shape=None, call_kwargs=None, **layer_kwargs):
    q = keras.Input(q_shape)
    inputs = [q]
    v = q
    if v_shape is not None:
        v = keras.Input(v_shape)
        inputs.append(v)
    kwargs = dict(call_kwargs or {})
    if k_shape is not None:
        kwargs["key"] = keras.Input(k_shape)
        inputs.append(kwargs["key"])
    layer_kwargs.setdefault("num_heads", 2)
    layer_kwargs.setdefault("key_dim", 3)
    out = L.MultiHeadAttention(**layer_kwargs)(q, v, **kwargs)
    return keras.Model(inputs, list(out) if isinstance(out, tuple) else out)


MHA_CASES = {
    "self": dict(q_shape=(5, 8)),
    "cross_key_value_dim_output_shape_no_bias": dict(
        q_shape=(4, 8), v_shape=(6, 5), k_shape=(6, 7), value_dim=4, output_shape=(3, 2),
        use_bias=False, call_kwargs={"return_attention_scores": True}),
    "one_head_int_output_shape": dict(q_shape=(3, 6), v_shape=(5, 6), num_heads=1, key_dim=5,
                                      output_shape=7),
    "four_heads_key_dim_1": dict(q_shape=(6, 4), num_heads=4, key_dim=1),
    "rank4_default_axes": dict(q_shape=(3, 4, 5), call_kwargs={"return_attention_scores": True}),
    "rank4_axis1": dict(q_shape=(3, 4, 5), v_shape=(2, 4, 6), attention_axes=(1,),
                        call_kwargs={"return_attention_scores": True}),
    "rank4_axis_minus2": dict(q_shape=(3, 4, 5), attention_axes=(-2,)),
    "rank5_axes_1_3": dict(q_shape=(2, 3, 4, 5), v_shape=(4, 3, 2, 6), attention_axes=(1, 3),
                           call_kwargs={"return_attention_scores": True}),
    "gate_sliding_window_causal": dict(q_shape=(6, 8), key_dim=4, use_gate=True, sliding_window=2,
                                       call_kwargs={"use_causal_mask": True}),
    "dropout_configured_causal_cross": dict(q_shape=(4, 6), v_shape=(7, 6), dropout=0.3,
                                            call_kwargs={"use_causal_mask": True}),
    "rank4_axis2_causal": dict(q_shape=(4, 4, 5), attention_axes=(2,),
                               call_kwargs={"use_causal_mask": True}),
}


@pytest.mark.parametrize("case", sorted(MHA_CASES))
def test_multi_head_attention(tmp_path, case):
    assert_matches_keras(_mha_model(**MHA_CASES[case]), tmp_path)


def _masked_mha(q_shape, mask_shape, v_shape=None, call_kwargs=None, **layer_kwargs):
    q = keras.Input(q_shape)
    m = keras.Input(mask_shape, dtype="bool")
    v = keras.Input(v_shape) if v_shape else q
    layer_kwargs.setdefault("num_heads", 2)
    layer_kwargs.setdefault("key_dim", 3)
    out = L.MultiHeadAttention(**layer_kwargs)(q, v, attention_mask=m, **(call_kwargs or {}))
    inputs = [q, m] + ([v] if v_shape else [])
    model = keras.Model(inputs, list(out) if isinstance(out, tuple) else out)
    data = [uniform(2, *q_shape), bool_mask(2, *mask_shape)] + ([uniform(2, *v_shape)] if v_shape else [])
    return model, data


MASK_CASES = {
    # Rank-3 inputs, no scores: Keras's fused dot-product attention (a fully masked row averages).
    "fused": dict(q_shape=(5, 8), mask_shape=(5, 5)),
    "fused_causal": dict(q_shape=(5, 8), mask_shape=(5, 5), call_kwargs={"use_causal_mask": True}),
    "fused_cross_broadcast_rows": dict(q_shape=(4, 8), v_shape=(6, 3), mask_shape=(1, 6)),
    # Scores returned: the Softmax-layer path (a fully masked row gives zeros).
    "softmax_path_scores": dict(q_shape=(5, 8), mask_shape=(5, 5),
                                call_kwargs={"return_attention_scores": True}),
    "softmax_path_causal_window_scores": dict(
        q_shape=(6, 8), mask_shape=(6, 6), sliding_window=3,
        call_kwargs={"return_attention_scores": True, "use_causal_mask": True}),
    "softmax_path_dropout_configured": dict(q_shape=(5, 8), mask_shape=(5, 5), dropout=0.5),
    "multi_axis": dict(q_shape=(3, 4, 5), mask_shape=(3, 4, 3, 4), attention_axes=(1, 2),
                       call_kwargs={"return_attention_scores": True}),
    # A mask that varies along only one of the folded query axes is broadcast in full first.
    "multi_axis_partial_broadcast": dict(q_shape=(3, 4, 5), mask_shape=(1, 4, 3, 4),
                                         attention_axes=(1, 2)),
    "rank4_one_axis": dict(q_shape=(3, 4, 5), mask_shape=(3, 4, 4), attention_axes=(2,)),
}


@pytest.mark.parametrize("case", sorted(MASK_CASES))
def test_multi_head_attention_attention_mask(tmp_path, case):
    model, data = _masked_mha(**MASK_CASES[case])
    assert_matches_keras(model, tmp_path, inputs=data)


def test_multi_head_attention_key_keyword_of_another_depth(tmp_path):
    """A key of another depth than the value, given as a keyword (the graph passes only
    positional shapes to shape inference; the key is checked when the layer runs). value_dim
    stays key_dim: Keras's fused path fails on rank-3 inputs otherwise (jax wants equal depths)."""
    model = _mha_model((4, 8), v_shape=(5, 6), k_shape=(5, 9))
    assert_matches_keras(model, tmp_path, formats=(".keras",))


# -------------------------------------------------------------------------------------------------
# Attention, AdditiveAttention
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layer_kwargs", [
    dict(), dict(use_scale=True), dict(score_mode="concat"),
    dict(score_mode="concat", use_scale=True, dropout=0.4),
], ids=["dot", "dot_scale", "concat", "concat_scale"])
@pytest.mark.parametrize("call_kwargs", [
    dict(), dict(use_causal_mask=True, return_attention_scores=True),
], ids=["plain", "causal_scores"])
def test_attention(tmp_path, layer_kwargs, call_kwargs):
    q, v = keras.Input((5, 6)), keras.Input((7, 6))
    out = L.Attention(**layer_kwargs)([q, v], **call_kwargs)
    model = keras.Model([q, v], list(out) if isinstance(out, tuple) else out)
    assert_matches_keras(model, tmp_path)


def test_attention_with_key_and_rank4(tmp_path):
    q, v, k = keras.Input((2, 5, 6)), keras.Input((2, 7, 3)), keras.Input((2, 7, 6))
    out, scores = L.Attention(use_scale=True)([q, v, k], return_attention_scores=True)
    assert_matches_keras(keras.Model([q, v, k], [out, scores]), tmp_path)


@pytest.mark.parametrize("use_scale", [True, False])
def test_additive_attention(tmp_path, use_scale):
    q, v, k = keras.Input((5, 6)), keras.Input((4, 3)), keras.Input((4, 6))
    out, scores = L.AdditiveAttention(use_scale=use_scale)([q, v, k], return_attention_scores=True,
                                                           use_causal_mask=not use_scale)
    assert_matches_keras(keras.Model([q, v, k], [out, scores]), tmp_path)


# -------------------------------------------------------------------------------------------------
# Propagated masks: Keras's mask from Masking layers vs the masks handed to kerasgl's call
# -------------------------------------------------------------------------------------------------
def _padded_sequences():
    x, y = uniform(3, 6, 8), uniform(3, 5, 8)
    x[0, 4:] = 0      # padded query steps
    x[1] = 0          # a fully masked query
    y[0, 3:] = 0      # padded value steps
    y[2, 1] = 0
    y[1] = 0          # a fully masked value (every score row masked)
    return x, y


def _propagated_mask_case(tmp_path, make_layer, call_keras, call_kerasgl):
    """Keras: Masking on both inputs, so the layer receives Keras masks. kerasgl: the same layer
    (same weights) loaded without the Masking layers and called with the masks explicitly."""
    q, v = keras.Input((6, 8)), keras.Input((5, 8))
    layer = make_layer()
    masked = keras.Model([q, v], call_keras(layer, L.Masking()(q), L.Masking()(v)))
    plain = keras.Model([q, v], call_keras(layer, q, v))
    randomize_weights(plain)
    x, y = _padded_sequences()
    expected = masked.predict([x, y], verbose=0)
    expected = list(expected) if isinstance(expected, (list, tuple)) else [expected]
    path = str(tmp_path / "plain.keras")
    plain.save(path)
    with kg.load_model(path) as model, kg.tidy():
        q_mask = kg.tensor((x != 0).any(-1))      # bool -> int32, as bool model inputs arrive
        v_mask = kg.tensor(((y != 0).any(-1)).astype("float32"))
        out = call_kerasgl(model.get_layer(layer.name), kg.tensor(x), kg.tensor(y), q_mask, v_mask)
        actual = [t.numpy() for t in (out if isinstance(out, list) else [out])]
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e)


@pytest.mark.parametrize("scores", [False, True], ids=["fused_path", "softmax_path"])
def test_multi_head_attention_query_value_masks(tmp_path, scores):
    _propagated_mask_case(
        tmp_path, lambda: L.MultiHeadAttention(2, 4),
        lambda layer, q, v: layer(q, v, return_attention_scores=scores),
        lambda layer, q, v, qm, vm: layer.call(q, v, query_mask=qm, value_mask=vm,
                                               return_attention_scores=scores))


def test_multi_head_attention_key_mask_and_causal(tmp_path):
    _propagated_mask_case(
        tmp_path, lambda: L.MultiHeadAttention(2, 4),
        lambda layer, q, v: layer(q, v, key=v, use_causal_mask=True),
        lambda layer, q, v, qm, vm: layer.call(q, v, key=v, query_mask=qm, value_mask=vm,
                                               key_mask=vm, use_causal_mask=True))


@pytest.mark.parametrize("make_layer", [
    lambda: L.Attention(use_scale=True), lambda: L.Attention(score_mode="concat"),
    lambda: L.AdditiveAttention(),
], ids=["dot", "concat", "additive"])
def test_dense_attention_masks(tmp_path, make_layer):
    _propagated_mask_case(
        tmp_path, make_layer,
        lambda layer, q, v: layer([q, v], return_attention_scores=True),
        lambda layer, q, v, qm, vm: layer.call([q, v], mask=[qm, vm], return_attention_scores=True))


# -------------------------------------------------------------------------------------------------
# Errors
# -------------------------------------------------------------------------------------------------
def test_wrong_shapes_raise_shape_errors(tmp_path):
    q = keras.Input((4, 8))
    model = keras.Model(q, L.MultiHeadAttention(2, 3, name="mha")(q, q))
    path = str(tmp_path / "m.keras")
    model.save(path)
    with kg.load_model(path) as loaded, kg.tidy():
        layer = loaded.get_layer("mha")
        with pytest.raises(kg.ShapeError, match="'mha'.*last dimension 8"):
            layer.call(kg.zeros((1, 4, 5)), kg.zeros((1, 4, 8)))
        with pytest.raises(kg.ShapeError, match="'mha'.*does not broadcast"):
            layer.call(kg.zeros((1, 4, 8)), kg.zeros((1, 4, 8)), attention_mask=kg.zeros((1, 3, 4)))
        with pytest.raises(kg.ShapeError, match="'mha'.*rank >= 3"):
            layer.call(kg.zeros((1, 8)), kg.zeros((1, 8)))


def test_attention_mask_of_wrong_shape_raises(tmp_path):
    q, v = keras.Input((4, 6)), keras.Input((5, 6))
    model = keras.Model([q, v], L.Attention(name="att")([q, v]))
    path = str(tmp_path / "a.h5")
    model.save(path)
    with kg.load_model(path) as loaded, kg.tidy():
        layer = loaded.get_layer("att")
        with pytest.raises(kg.ShapeError, match="'att'.*value mask of shape \\[2, 4\\]"):
            layer.call([kg.zeros((2, 4, 6)), kg.zeros((2, 5, 6))],
                       mask=[None, kg.ones((2, 4), dtype="int32")])


# -------------------------------------------------------------------------------------------------
# The ops against numpy
# -------------------------------------------------------------------------------------------------
def _reference_weights(q, k, scale, mask, causal, zero):
    scores = np.einsum("gtnh,gsnh->gnts", q, k) * scale
    keep = np.broadcast_to(mask != 0, scores.shape) if mask is not None else np.ones(scores.shape, bool)
    if causal:
        keep = keep & np.tril(np.ones(scores.shape[-2:], bool))
    scores = np.where(keep, scores, -1e9)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.where(keep, weights, 0.0) if zero else weights


@pytest.mark.parametrize("causal,zero", [(False, False), (True, True)])
def test_ops_match_numpy(causal, zero):
    G, T, S, N, H, Hv = 3, 5, 7, 2, 6, 5
    q, k, v = uniform(G, T, N, H), uniform(G, S, N, H), uniform(G, S, N, Hv)
    mask = bool_mask(G, 1, T, S).astype("int32")
    rows = bool_mask(G, T, full_rows=False).astype("float32")
    expected = _reference_weights(q, k, 0.7, mask, causal, zero)
    with kg.tidy():
        weights = attn_ops.attention_weights(kg.tensor(q), kg.tensor(k), scale=0.7,
                                             mask=kg.tensor(mask), causal=causal, zero_masked=zero)
        assert_close(weights.numpy(), expected, what="weights")
        out = attn_ops.attention_combine(weights, kg.tensor(v), row_mask=kg.tensor(rows))
        assert_close(out.numpy(), np.einsum("gnts,gsnh->gtnh", expected, v) * rows[:, :, None, None],
                     what="combined")
        merged = attn_ops.mask_and(kg.tensor(mask), kg.tensor(rows[:, None, :, None]), (G, N, T, S))
        assert_close(merged.numpy(), ((mask != 0) & (rows[:, None, :, None] != 0)).astype("float32")
                     * np.ones((G, N, T, S), "float32"), what="mask_and")


def test_multi_head_attention_called_by_keywords(tmp_path):
    """mha(query=q, value=v, key=k): Keras 3 saves every tensor as a keyword argument."""
    q, v, k = keras.Input((4, 8)), keras.Input((5, 6)), keras.Input((5, 3))
    out, scores = L.MultiHeadAttention(3, 2, name="mha")(query=q, value=v, key=k,
                                                         return_attention_scores=True)
    assert_matches_keras(keras.Model([q, v, k], [out, scores]), tmp_path)


# Keras 3 does not record the masks that reach attention layers in functional configs (no
# `mask=` / `query_mask=` in their nodes): Keras re-derives them when it rebuilds the model, and
# so does masks.MaskPlan. Each case runs through load_model in .keras and .h5.
def _token_ids(batch, steps, seed, pad_from):
    ids = np.random.default_rng(seed).integers(1, 10, (batch, steps))
    ids[0, pad_from:] = 0            # trailing padding
    ids[1, 0] = 0                    # a hole in front
    if batch > 2:
        ids[2, :] = 0                # nothing kept: a fully masked row
    return ids.astype("int32")


MASKED_ATTENTION = {
    "mha_self": lambda q, v: L.MultiHeadAttention(2, 4)(q, q),
    "mha_cross": lambda q, v: L.MultiHeadAttention(2, 4)(q, v),
    "mha_cross_key": lambda q, v: L.MultiHeadAttention(2, 4)(q, v, key=v),
    "mha_scores": lambda q, v: list(L.MultiHeadAttention(2, 4)(q, v, return_attention_scores=True)),
    "attention": lambda q, v: L.Attention()([q, v]),
    "attention_scaled_key_scores": lambda q, v: list(L.Attention(use_scale=True)(
        [q, v, v], return_attention_scores=True)),
    "additive": lambda q, v: L.AdditiveAttention()([q, v]),
    "additive_key": lambda q, v: L.AdditiveAttention()([q, v, v]),
}


@pytest.mark.parametrize("kind", list(MASKED_ATTENTION))
def test_masked_embeddings_into_attention_through_load_model(tmp_path, kind):
    tokens, other = keras.Input((6,), dtype="int32"), keras.Input((5,), dtype="int32")
    q = L.Embedding(10, 8, mask_zero=True)(tokens)
    v = L.Embedding(10, 8, mask_zero=True)(other)
    out = MASKED_ATTENTION[kind](q, v)
    # An LSTM after the attention reads the output mask (the query's) only where it is defined.
    first = out[0] if isinstance(out, list) else out
    outputs = [first, L.LSTM(3)(first)] + (out[1:] if isinstance(out, list) else [])
    assert_matches_keras(keras.Model([tokens, other], outputs), tmp_path,
                         inputs=[_token_ids(3, 6, 1, 3), _token_ids(3, 5, 2, 2)])


@pytest.mark.parametrize("kind", ["mha", "attention"])
def test_unmasked_query_and_masked_value(tmp_path, kind):
    q_in, other = keras.Input((4, 8)), keras.Input((5,), dtype="int32")
    v = L.Embedding(10, 8, mask_zero=True)(other)
    out = L.MultiHeadAttention(2, 4)(q_in, v) if kind == "mha" else L.Attention()([q_in, v])
    assert_matches_keras(keras.Model([q_in, other], out), tmp_path,
                         inputs=[uniform(3, 4, 8), _token_ids(3, 5, 3, 2)])


def test_mask_through_layer_normalization_into_attention(tmp_path):
    tokens = keras.Input((6,), dtype="int32")
    x = L.LayerNormalization()(L.Embedding(10, 8, mask_zero=True)(tokens))
    x = L.Dense(8)(L.Dropout(0.2)(x))
    model = keras.Model(tokens, L.MultiHeadAttention(2, 4)(x, x))
    assert_matches_keras(model, tmp_path, inputs=[_token_ids(3, 6, 4, 4)])


def test_masked_transformer_encoder_classifier(tmp_path):
    """Two encoder blocks. Keras 3's MultiHeadAttention erases its inputs' masks, so the
    residual Add after the first attention carries none and the second attention runs
    unmasked; the final pooling gets the mask recorded in the file (a symbolic OR)."""
    tokens = keras.Input((7,), dtype="int32")
    x = L.Embedding(12, 8, mask_zero=True)(tokens)
    for _ in range(2):
        attended = L.MultiHeadAttention(2, 4)(x, x)
        x = L.LayerNormalization(epsilon=1e-6)(L.Add()([x, attended]))
        ff = L.Dense(8)(L.Dense(16, activation="relu")(x))
        x = L.LayerNormalization(epsilon=1e-6)(L.Add()([x, ff]))
    pooled = L.GlobalAveragePooling1D()(x)
    out = L.Dense(3, activation="softmax")(pooled)
    ids = _token_ids(3, 7, 5, 4)
    ids[2, :2] = 3                   # the pooling divides by the kept count: keep some
    assert_matches_keras(keras.Model(tokens, out), tmp_path, inputs=[ids])


def test_attention_reading_a_mask_after_attention_erased_it(tmp_path):
    """MultiHeadAttention(x, x) then Attention([attended, x]): x's mask is gone (Keras erased
    it), the attended output carries the query's mask."""
    tokens = keras.Input((6,), dtype="int32")
    x = L.Embedding(10, 8, mask_zero=True)(tokens)
    attended = L.MultiHeadAttention(2, 4)(x, x)
    out = L.Attention()([attended, L.Dropout(0.1)(x)])
    assert_matches_keras(keras.Model(tokens, [out, L.GRU(2)(out)]), tmp_path,
                         inputs=[_token_ids(3, 6, 6, 3)])


def test_parallel_attentions_on_one_masked_tensor_are_refused(tmp_path):
    """Two independent attentions over x: whichever Keras runs first erases x's mask for the
    other; kerasgl refuses rather than guess Keras's order."""
    tokens = keras.Input((6,), dtype="int32")
    x = L.Embedding(10, 8, mask_zero=True)(tokens)
    out = L.Concatenate()([L.MultiHeadAttention(2, 4)(x, x), L.MultiHeadAttention(2, 4)(x, x)])
    path = str(tmp_path / "parallel.keras")
    keras.Model(tokens, out).save(path)
    before = kg.memory().num_tensors
    with pytest.raises(kg.UnsupportedLayerError, match="erases"):
        kg.load_model(path)
    assert kg.memory().num_tensors == before


def test_explicit_masks_passed_to_attention(tmp_path):
    """Masks passed by hand (op nodes in the file): Attention's mask=[q, v] list and
    MultiHeadAttention's value_mask / key_mask."""
    tokens, other = keras.Input((6,), dtype="int32"), keras.Input((5,), dtype="int32")
    q = L.Embedding(10, 8)(tokens)
    v = L.Embedding(10, 8)(other)
    q_mask, v_mask = keras.ops.not_equal(tokens, 0), keras.ops.not_equal(other, 0)
    outputs = [L.Attention()([q, v], mask=[q_mask, v_mask]),
               L.AdditiveAttention()([q, v, v], mask=[None, v_mask, v_mask]),
               L.MultiHeadAttention(2, 4)(q, v, value_mask=v_mask, key_mask=v_mask)]
    assert_matches_keras(keras.Model([tokens, other], outputs), tmp_path,
                         inputs=[_token_ids(3, 6, 7, 3), _token_ids(3, 5, 8, 2)])
