"""Custom layers (kerasgl/layers/custom/custom_layer.py): a Keras model holding a layer class of its author's
runs when load_model is given a kerasgl class for it (custom_objects), as keras.models.load_model
does with the Keras class. The transformer block of docs/custom_layers.md is taken from the page
and run here, in both file formats, against the Keras block it stands for."""
import os
import re

import numpy as np
import pytest

from keras_ref import assert_close, keras, random_inputs, randomize_weights

import kerasgl as kg
from kerasgl.errors import KerasGLError, ModelFileError, ShapeError, UnsupportedLayerError

DOCS = os.path.join(os.path.dirname(__file__), "..", "docs", "custom_layers.md")
SEQ, DIM = 6, 8


def _docs_classes():
    """The page's runnable examples (its ```python blocks), each run in its own namespace."""
    with open(DOCS, encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    namespaces = []
    for code in blocks:
        namespace = {"__name__": "custom_layers_docs"}
        exec(compile(code, DOCS, "exec"), namespace)
        namespaces.append(namespace)
    return namespaces


@pytest.fixture(scope="module")
def docs_example():
    keras_ns, kerasgl_ns = _docs_classes()
    return keras_ns["TransformerBlock"], kerasgl_ns["TransformerBlockGL"]


def _block_model(keras_block):
    tokens = keras.Input((SEQ, DIM))
    x = keras_block(heads=2, ff_dim=16, name="block")(tokens)
    x = keras_block(heads=4, ff_dim=8, epsilon=1e-3, name="block_2")(x)
    outputs = keras.layers.Dense(3, activation="softmax")(keras.layers.GlobalAveragePooling1D()(x))
    model = keras.Model(tokens, outputs, name="with_blocks")
    randomize_weights(model, seed=3, low=-0.5, high=0.5)
    return model


@pytest.mark.parametrize("fmt", [".keras", ".h5"])
@pytest.mark.parametrize("key", ["TransformerBlock", "my_models>TransformerBlock"])
def test_docs_transformer_block_matches_keras(tmp_path, docs_example, fmt, key):
    keras_block, gl_block = docs_example
    model = _block_model(keras_block)
    inputs = random_inputs(model, batch=3)
    expected = model.predict(inputs[0], verbose=0)
    path = str(tmp_path / f"blocks{fmt}")
    model.save(path)
    with kg.load_model(path, custom_objects={key: gl_block}) as loaded:
        assert_close(loaded.predict(inputs[0], verbose=0), expected, what=f"blocks{fmt}")
        # Predict twice: the second call may replay a recorded plan of the first.
        assert_close(loaded.predict(inputs[0], verbose=0), expected, what=f"blocks{fmt} again")


def test_unknown_class_refusal_says_how(tmp_path, docs_example):
    keras_block, _ = docs_example
    path = str(tmp_path / "blocks.keras")
    _block_model(keras_block).save(path)
    with pytest.raises(UnsupportedLayerError) as info:
        kg.load_model(path)
    message = str(info.value)
    assert "layer class TransformerBlock is not supported" in message
    assert "custom_objects" in message and "docs/custom_layers.md" in message
    assert "'block'" in message and "'block_2'" in message


def test_keras_class_given_is_refused(tmp_path, docs_example):
    keras_block, _ = docs_example
    path = str(tmp_path / "blocks.keras")
    _block_model(keras_block).save(path)
    with pytest.raises(KerasGLError, match="not a kerasgl layer class"):
        kg.load_model(path, custom_objects={"TransformerBlock": keras_block})


def test_weight_count_mismatch_names_the_file_arrays(tmp_path, docs_example):
    keras_block, gl_block = docs_example

    class TooFew(gl_block):
        weight_names = ("wq", "bq")

    path = str(tmp_path / "blocks.h5")
    _block_model(keras_block).save(path)
    with pytest.raises((ShapeError, ModelFileError), match="lists 2 weights.*holds 16 arrays"):
        kg.load_model(path, custom_objects={"TransformerBlock": TooFew})


@keras.saving.register_keras_serializable(package="tests")
class Halve(keras.layers.Layer):
    """A weightless custom layer that changes the shape: keeps every other feature, halved."""

    def call(self, x):
        return x[:, ::2] * 0.5

    def compute_output_shape(self, shape):
        return shape[:-1] + ((shape[-1] + 1) // 2,)


class HalveGL(kg.CustomLayer):
    def compute_output_shape(self, input_shape):
        return input_shape[:-1] + ((input_shape[-1] + 1) // 2,)

    def call(self, x):
        n = x.shape[-1]
        keep = np.zeros((n, (n + 1) // 2), np.float32)
        keep[np.arange(0, n, 2), np.arange((n + 1) // 2)] = 0.5
        selector = kg.tensor(keep)        # a temporary: freed when call returns
        return x @ selector


@pytest.mark.parametrize("fmt", [".keras", ".h5"])
def test_weightless_custom_layer_with_its_own_shape(tmp_path, fmt):
    model = keras.Sequential([keras.Input((7,)), keras.layers.Dense(6), Halve(name="halve"),
                              keras.layers.Dense(2)])
    randomize_weights(model)
    x = random_inputs(model, batch=4)[0]
    path = str(tmp_path / f"halve{fmt}")
    model.save(path)
    with kg.load_model(path, custom_objects={"Halve": HalveGL}) as loaded:
        assert loaded.output_shape == (None, 2)
        assert_close(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
