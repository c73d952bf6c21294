"""Checks that only mean something under KERASGL_DEVICE_POLICY=plain (the generic GPU tuning: what
NVIDIA, AMD and Intel GPUs run), run by tests/test_plain_policy.py in a process of their own
with that setting; the name keeps pytest from collecting them in the main run, where they skip.

Under the plain policy whole models dispatch (almost) every invocation in work groups of whole
64-lane waves (two NVIDIA warps, one AMD wave64), every large dispatch in groups of 64 to 256,
and the GPU-shaped kernels (the implicit-GEMM convolution, the tiled GEMM, the depthwise
convolution that stages its input tile in shared memory) are what runs.
Invocations and work group sizes come from the profiler (kerasgl/profiler/)."""
import os

import numpy as np
import pytest

from keras_ref import keras

import kerasgl as kg
from kerasgl.runtime import context, tuning

# The share of a model's invocations that must be in work groups of >= 64, and the dispatch size
# from which every dispatch must be (a few thousand invocations: a GPU's smallest useful load).
WHOLE_WAVE_SHARE = 0.95
LARGE_DISPATCH = 2048
# name: (input size, whether its implicit-GEMM convolutions include KxK or strided ones:
# MobileNetV2's are all 1x1, its 3x3 stem taking 3 channels, which conv2d.comp does).
MODELS = {"MobileNetV2": (96, False), "ResNet50": (64, True)}


@pytest.fixture(autouse=True)
def plain_only():
    if context.policy().name != "plain":
        pytest.skip("run under KERASGL_DEVICE_POLICY=plain by tests/test_plain_policy.py")


def test_the_generic_gpu_tuning_is_in_force():
    assert tuning.current() == tuning.Tuning()


def profiled_predict(name, size, tmp_path):
    path = os.path.join(str(tmp_path), f"{name}.keras")
    getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3)).save(path)
    x = np.random.default_rng(0).random((1, size, size, 3), dtype=np.float32)
    with kg.load_model(path) as model:
        model.predict(x, verbose=0)
        with kg.profile(gpu_timing=False) as p:
            model.predict(x, verbose=0)
    return [e for e in p.events if e.invocations]


@pytest.mark.parametrize("name", MODELS)
def test_models_dispatch_in_whole_waves(name, tmp_path):
    size, windowed = MODELS[name]
    events = profiled_predict(name, size, tmp_path)
    total = sum(e.invocations for e in events)
    whole = sum(e.invocations for e in events if e.group_invocations >= 64)
    assert whole >= WHOLE_WAVE_SHARE * total, (name, whole, total)
    for event in events:
        if event.invocations >= LARGE_DISPATCH:
            size = event.group_invocations
            assert 64 <= size <= 256 and size % 64 == 0, (event.kernel, event.local_size)
    gemm = [e.kernel.split() for e in events if e.kernel.startswith("conv_gemm.comp")]
    assert {"POINTWISE" in defines for defines in gemm} == ({True, False} if windowed else {True})
    # MobileNetV2's depthwise convolutions (ResNet50 has none) on the tiled kernel.
    depthwise = [e for e in events if e.kernel.startswith("depthwise_conv2d.comp")]
    assert len(depthwise) == (17 if name == "MobileNetV2" else 0), len(depthwise)
    assert all("TILED" in e.kernel.split() and e.group_invocations == 256 for e in depthwise)
