"""EinsumDense against Keras 3 (.keras and .h5): every equation form Keras accepts (plain, left and
right ellipsis), batch letters shared by input and kernel, an input letter summed away, bias_axes on
any output letters, and fused and unfused activations."""
import pytest
import kerasgl as kg
from keras_ref import assert_matches_keras, keras

L = keras.layers


@pytest.mark.parametrize("input_shape,kwargs", [
    ((5,), dict(equation="ab,bc->ac", output_shape=4)),
    ((5,), dict(equation="ab,bc->ac", output_shape=4, bias_axes="c", activation="relu")),
    ((3, 5), dict(equation="abc,cd->abd", output_shape=(3, 4), bias_axes="d")),
    ((3, 5), dict(equation="abc,cd->abd", output_shape=(3, 4), bias_axes="bd", activation="tanh")),
    ((3, 5), dict(equation="abc,cde->abde", output_shape=(3, 2, 4), bias_axes="de")),
    ((3, 5), dict(equation="abc,cde->abde", output_shape=(3, 2, 4), bias_axes="d")),
    ((3, 5), dict(equation="abc,cde->adbe", output_shape=(2, 3, 4), bias_axes="be")),
    ((3, 5), dict(equation="abc,bcd->ad", output_shape=4, bias_axes="d")),
    ((3, 5), dict(equation="abc,bcd->abd", output_shape=(3, 4), bias_axes="bd")),
    ((3, 5), dict(equation="abc,cb->ab", output_shape=(3,))),
    ((3, 5), dict(equation="abc,cd->ad", output_shape=4, bias_axes="d")),
    ((4, 3, 5), dict(equation="...c,cd->...d", output_shape=4, bias_axes="d", activation="gelu")),
    ((4, 3, 5), dict(equation="...bc,cd->...bd", output_shape=(3, 4), bias_axes="bd")),
    ((5, 4, 3), dict(equation="ab...,bc->ac...", output_shape=(2, 4, 3), bias_axes="c")),
    ((3, 2, 5), dict(equation="abcd,cde->abe", output_shape=(3, 4), bias_axes="e",
                     activation="softmax")),
])
def test_einsum_dense(input_shape, kwargs, tmp_path):
    model = keras.Sequential([keras.Input(input_shape), L.EinsumDense(**kwargs)], name="einsum")
    assert_matches_keras(model, tmp_path)


def test_einsum_dense_in_attention_projection(tmp_path):
    """The projection MultiHeadAttention uses (btd,dnh->btnh), then the output one back."""
    inp = keras.Input((6, 8))
    heads = L.EinsumDense("abc,cde->abde", output_shape=(None, 2, 4), bias_axes="de")(inp)
    out = L.EinsumDense("abcd,cde->abe", output_shape=(None, 8), bias_axes="e")(heads)
    model = keras.Model(inp, out, name="einsum_proj")
    assert_matches_keras(model, tmp_path)


def test_einsum_dense_with_lora_is_refused(tmp_path):
    model = keras.Sequential([keras.Input((3, 5)),
                              L.EinsumDense("abc,cd->abd", output_shape=(3, 4), lora_rank=2)])
    path = str(tmp_path / "einsum_lora.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError, match="LoRA"):
        kg.load_model(path)
