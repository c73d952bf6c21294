"""Helpers for the convolution / pooling / spatial reshaping tests.

- `F.<LayerName>(...)`: the Keras layer with zero initializers. Keras's default random
  initializers compile one XLA program per weight shape (about a second each on this machine);
  assert_matches_keras randomises every weight anyway.
- `assert_branches_match_keras`: many layer configurations in one Functional model (one save /
  load / predict per group keeps the suite fast), each branch named after its configuration so a
  failure says which one.
- `layer_spec`, `randomized` and `assert_layer_matches`: a kerasgl layer made directly from a
  Keras layer's LayerSpec, run on one input and compared with the Keras layer's output.
"""
import functools

import numpy as np
from keras_ref import assert_close, assert_matches_keras, keras, random_inputs

import kerasgl as kg
from kerasgl.saving.spec import LayerSpec

_INITIALIZERS = {
    "DepthwiseConv1D": ("depthwise_initializer",),
    "DepthwiseConv2D": ("depthwise_initializer",),
    "SeparableConv1D": ("depthwise_initializer", "pointwise_initializer"),
    "SeparableConv2D": ("depthwise_initializer", "pointwise_initializer"),
}


class _ZeroInitLayers:
    def __getattr__(self, name):
        keys = _INITIALIZERS.get(name, ("kernel_initializer",))
        return functools.partial(getattr(keras.layers, name), **{key: "zeros" for key in keys})


F = _ZeroInitLayers()


def assert_branches_match_keras(tmp_path, input_shape, layers, name, batch=2):
    """Every layer applied to the same input, as one multi-output model, compared with Keras."""
    inputs = keras.Input(input_shape)
    model = keras.Model(inputs, [layer(inputs) for layer in layers], name=name)
    assert_matches_keras(model, tmp_path, inputs=random_inputs(model, batch=batch))


def layer_spec(layer, shape=None, config=None):
    """The LayerSpec a file would hold for this Keras layer (built for `shape` first, if given)."""
    if shape is not None:
        layer.build(shape)
    return LayerSpec(type(layer).__name__, layer.name, layer.get_config() if config is None else config,
                     weights=layer.get_weights())


def randomized(layer, shape, seed):
    """The Keras layer built for `shape`, with uniform(-1, 1) weights drawn from `seed`."""
    layer.build(shape)
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.uniform(-1, 1, w.shape).astype("float32") for w in layer.get_weights()])
    return layer


def assert_layer_matches(ours, x, expected, storage="buffer"):
    """Build the kerasgl layer for x's shape, call it on x stored in `storage` (a texture input
    must give a texture output), compare with Keras's `expected`, and dispose the layer."""
    ours.build((None,) + x.shape[1:])
    try:
        with kg.tidy():
            y = ours.call(kg.tensor(x, storage=storage))
            if storage == "texture":
                assert y.storage == "texture"
            assert_close(y.numpy(), expected)
    finally:
        ours.dispose()
