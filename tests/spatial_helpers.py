"""Helpers for the convolution / pooling / spatial reshaping tests.

- `F.<LayerName>(...)`: the Keras layer with zero initializers. Keras's default random
  initializers compile one XLA program per weight shape (about a second each on this machine);
  assert_matches_keras randomises every weight anyway.
- `assert_branches_match_keras`: many layer configurations in one Functional model (one save /
  load / predict per group keeps the suite fast), each branch named after its configuration so a
  failure says which one.
"""
import functools

from keras_ref import assert_matches_keras, keras, random_inputs

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
