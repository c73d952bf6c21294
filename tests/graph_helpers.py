"""Small custom layers that exist both in Keras and in kerasgl, so the graph machinery (shared
layers, nested models, weights, failures at load) is tested with real Keras files and Keras's
answers, independently of the built-in layer families.

    Scale: y = x * w, one weight vector over the last axis (random values via randomize_weights)
    Probe: identity in Keras; in kerasgl it returns its input object (the graph must cope) and
           records how many tensors are alive when it runs
    Boom:  fine in Keras; in kerasgl its build uploads something, then raises

`gl_test_layers` (a fixture) registers the kerasgl sides for one test.
"""
from __future__ import annotations

import keras
import pytest

import kerasgl as kg
from kerasgl.errors import ShapeError
from kerasgl.layers import LAYER_CLASSES, Layer
from kerasgl.ops import elementwise


@keras.saving.register_keras_serializable(package="kgtest")
class Scale(keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

    def call(self, x):
        return x * self.w


@keras.saving.register_keras_serializable(package="kgtest")
class Probe(keras.layers.Layer):
    def call(self, x):
        return x


@keras.saving.register_keras_serializable(package="kgtest")
class Boom(keras.layers.Layer):
    def call(self, x):
        return x


class GLScale(Layer):
    shaders = ("binary.comp",)

    def build(self, input_shape):
        self.expect_weights(1)
        self.w = self.upload(self.weights_np[0])
        self.built = True

    def call(self, x):
        return elementwise.mul(x, self.w)


class GLProbe(Layer):
    seen: list = []

    def call(self, x):
        GLProbe.seen.append(kg.memory().num_tensors)
        return x


class GLBoom(Layer):
    def build(self, input_shape):
        self.upload([1.0, 2.0, 3.0])        # something uploaded before the failure
        raise ShapeError(f"Layer '{self.name}' (Boom): refuses to build.")


@pytest.fixture
def gl_test_layers(monkeypatch):
    # .keras files name a registered class "Scale"; legacy .h5 files "kgtest>Scale".
    for name, cls in (("Scale", GLScale), ("Probe", GLProbe), ("Boom", GLBoom)):
        monkeypatch.setitem(LAYER_CLASSES, name, cls)
        monkeypatch.setitem(LAYER_CLASSES, f"kgtest>{name}", cls)
    GLProbe.seen = []
    yield


def gl_state():
    """What is alive on the GPU apart from cached programs: kerasgl's count and the driver's."""
    mem = kg.memory()
    driver = kg.driver_objects().counts()
    return (mem.num_tensors, mem.num_bytes, mem.num_buffers, mem.num_textures,
            driver["buffer"], driver["texture"])
