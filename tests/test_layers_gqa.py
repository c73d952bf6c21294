"""GroupQueryAttention (Keras class GroupedQueryAttention) against Keras 3 (.keras and .h5):
grouped and ungrouped heads, with and without bias and gate, a separate key, use_causal_mask,
sliding_window, an explicit attention_mask, returned scores, and Keras masks from Masking on
query and value."""
import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

L = keras.layers


def _model(layer_kwargs, call_kwargs=None, with_key=False, masked=False, with_mask=False,
           s_len=5):
    q = keras.Input((4, 6))
    v = keras.Input((s_len, 6))
    inputs = [q, v]
    args = [L.Masking(0.0)(q), L.Masking(0.0)(v)] if masked else [q, v]
    kwargs = dict(call_kwargs or {})
    if with_key:
        k = keras.Input((s_len, 6))
        inputs.append(k)
        kwargs["key"] = k
    if with_mask:
        m = keras.Input((4, s_len), dtype="bool")
        inputs.append(m)
        kwargs["attention_mask"] = m
    out = L.GroupQueryAttention(**layer_kwargs)(*args, **kwargs)
    outputs = list(out) if isinstance(out, (tuple, list)) else [out]
    return keras.Model(inputs, outputs, name="gqa")


def _data(model, zero_rows=False, seed=5):
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in model.inputs:
        shape = (2,) + tuple(spec.shape[1:])
        if "bool" in str(spec.dtype):
            mask = rng.random(shape) > 0.35
            mask[..., 0] = True
            arrays.append(mask)
        else:
            a = rng.uniform(-1, 1, shape).astype("float32")
            if zero_rows:
                a[0, -2:] = 0.0
            arrays.append(a)
    return arrays


@pytest.mark.parametrize("layer_kwargs,call_kwargs,extra", [
    (dict(head_dim=3, num_query_heads=4, num_key_value_heads=2), {}, {}),
    (dict(head_dim=2, num_query_heads=4, num_key_value_heads=1, use_bias=False), {}, {}),
    (dict(head_dim=3, num_query_heads=2, num_key_value_heads=2, use_gate=True), {}, {}),
    (dict(head_dim=3, num_query_heads=6, num_key_value_heads=3), {}, dict(with_key=True)),
    (dict(head_dim=3, num_query_heads=4, num_key_value_heads=2),
     dict(use_causal_mask=True), dict(s_len=4)),
    (dict(head_dim=3, num_query_heads=4, num_key_value_heads=2, sliding_window=2),
     dict(use_causal_mask=True), dict(s_len=4)),
    (dict(head_dim=3, num_query_heads=4, num_key_value_heads=2, sliding_window=2), {}, {}),
    (dict(head_dim=3, num_query_heads=4, num_key_value_heads=2), {}, dict(with_mask=True)),
    (dict(head_dim=3, num_query_heads=4, num_key_value_heads=2),
     dict(return_attention_scores=True), dict(with_mask=True)),
    (dict(head_dim=3, num_query_heads=4, num_key_value_heads=2, dropout=0.3,
          use_gate=True), {}, {}),
])
def test_grouped_query_attention(layer_kwargs, call_kwargs, extra, tmp_path):
    model = _model(layer_kwargs, call_kwargs, **extra)
    assert_matches_keras(model, tmp_path, inputs=_data(model))


@pytest.mark.parametrize("call_kwargs", [{}, dict(return_attention_scores=True)])
def test_grouped_query_attention_with_keras_masks(call_kwargs, tmp_path):
    model = _model(dict(head_dim=3, num_query_heads=4, num_key_value_heads=2), call_kwargs,
                   masked=True)
    assert_matches_keras(model, tmp_path, inputs=_data(model, zero_rows=True))


def test_masks_flow_on_after_grouped_query_attention(tmp_path):
    """Keras's output carries the query's mask, and the inputs keep theirs (unlike
    MultiHeadAttention, GroupedQueryAttention does not erase them): pooling after both reads it."""
    q = keras.Input((4, 6))
    v = keras.Input((5, 6))
    mq, mv = L.Masking(0.0)(q), L.Masking(0.0)(v)
    out = L.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)(mq, mv)
    pooled = [L.GlobalAveragePooling1D()(t) for t in (out, mq, mv)]
    model = keras.Model([q, v], pooled, name="gqa_mask_flow")
    assert_matches_keras(model, tmp_path, inputs=_data(model, zero_rows=True))
