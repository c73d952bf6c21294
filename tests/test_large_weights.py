"""Weights larger than one shader storage block (kerasgl/ops/splits.py).

One binding addresses at most GL_MAX_SHADER_STORAGE_BLOCK_SIZE bytes (128 MiB on llvmpipe), less
than VGG16's fc1 kernel (411 MB). Such weights are split along their outputs over several
buffers, one dispatch per piece writing its range of the one output: Keras's values, the same bit
for bit as unsplit, recorded and replayed by execution plans. KERASGL_MAX_STORAGE_BLOCK lowers the
limit so that small layers split into many pieces. What cannot be split (one sample whose
tensors exceed the limit) fails with a GPULimitError whose advice fits that case.
"""
import os

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl import settings
from kerasgl.ops import conv, matmul
from kerasgl.runtime import context

L = keras.layers
WARM_UP = 3          # two recorded calls that agree, then the plan replays
SMALL_BLOCK = 8192   # bytes: every layer below splits, every activation still fits


def _save(model, tmp_path, fmt=".keras", seed=0):
    randomize_weights(model, seed)
    path = os.path.join(str(tmp_path), f"{model.name}{fmt}")
    model.save(path)
    return path


def _rand(shape, seed=1, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype("float32")


def _pieces(layer) -> int:
    """How many buffers a loaded layer's weights are split over (1: not split)."""
    kernel = layer.kernel
    return len(kernel.pieces) if isinstance(kernel, (matmul.ColumnSplit, conv.ConvKernel)) else 1


def _biggest_tensor(layer) -> int:
    return max(w.nbytes for w in layer.gpu_weights())


def test_vgg16_at_224_splits_fc1_and_matches_keras(tmp_path):
    """VGG16 at 224 with random weights: fc1 (25088 x 4096) in column pieces of at most 128 MiB
    (llvmpipe's limit; enforced on drivers that allow more), logits within 1e-4 of Keras's, eager
    and replayed from a plan."""
    limit = min(context.limits().max_ssbo_block_bytes, 1 << 27)
    keras.utils.set_random_seed(0)
    model = keras.applications.VGG16(weights=None, classifier_activation=None)
    # 0..255 as images come (VGG16's weights=None model has no preprocessing): logits near 1.
    x = _rand((1, 224, 224, 3), low=0.0, high=255.0)
    expected = np.asarray(model(x))
    path = os.path.join(str(tmp_path), "vgg16.keras")
    model.save(path)
    del model
    with settings.override(max_storage_block=limit):
        with kg.load_model(path) as loaded:
            fc1 = loaded.get_layer("fc1")
            assert isinstance(fc1.kernel, matmul.ColumnSplit)
            assert _pieces(fc1) >= 4 and _biggest_tensor(fc1) <= limit
            for _ in range(WARM_UP):
                assert_close(loaded.predict(x, verbose=0), expected, what="VGG16 logits")
            assert [i.status for i in loaded.plan_info()] == ["planned"]


def _conv_model():
    x = keras.Input((6, 6, 8), name="image")
    y = L.Conv2D(40, 3, padding="same", activation="relu")(x)
    y = L.Conv2D(48, 3, padding="same", groups=4)(y)
    y = L.Conv2DTranspose(16, 3, padding="same", activation="relu")(y)
    y = L.MaxPooling2D()(y)
    y = L.Flatten()(y)
    y = L.Dense(100, activation="relu")(y)
    return keras.Model(x, L.Dense(30, activation="softmax")(y), name="split_conv")


def _sequence_model():
    x = keras.Input((10, 12), name="sequence")
    y = L.Conv1D(64, 3, padding="same", activation="relu")(x)
    return keras.Model(x, L.Dense(50)(y), name="split_sequence")     # a Dense on 3-D inputs


@pytest.mark.parametrize("build,fmt", [(_conv_model, ".keras"), (_sequence_model, ".h5")],
                         ids=["conv_dense_softmax", "conv1d_dense3d"])
def test_a_lowered_limit_splits_small_layers_into_many_pieces(build, fmt, tmp_path):
    """Under KERASGL_MAX_STORAGE_BLOCK = 8 KiB every Conv/Dense of these models splits (plain,
    grouped, transposed and 1D convolutions, Dense on 2-D and 3-D inputs, a softmax head): Keras's
    values, equal bit for bit to the unsplit model's, and the same from the replayed plan."""
    model = build()
    path = _save(model, tmp_path, fmt)
    x = _rand((3,) + tuple(model.inputs[0].shape[1:]))
    expected = model.predict(x, verbose=0)
    with kg.load_model(path) as whole:
        unsplit = whole.predict(x, verbose=0)
    with settings.override(max_storage_block=SMALL_BLOCK):
        with kg.load_model(path) as loaded:
            layers = [layer for layer in loaded.layers if hasattr(layer, "kernel")]
            assert layers and all(_pieces(layer) > 1 for layer in layers), \
                {layer.name: _pieces(layer) for layer in layers}
            assert all(_biggest_tensor(layer) <= SMALL_BLOCK for layer in layers)
            for _ in range(WARM_UP):
                split = loaded.predict(x, verbose=0)
                np.testing.assert_array_equal(split, unsplit)
            assert [i.status for i in loaded.plan_info()] == ["planned"]
    assert_close(split, expected)


@pytest.mark.parametrize("columns", [256, 50])
def test_split_dense_on_the_convolution_kernel_matches_numpy(columns):
    """A batch large enough for the matmul to run on the convolution kernel (16 x 2048 x 256)
    runs each piece there, writing its output-channel blocks; columns not a multiple of a
    piece's (50) take the matmul kernel with scalar stores. Equal to the unsplit op's values."""
    rng = np.random.default_rng(0)
    kernel = rng.standard_normal((2048, columns)).astype("float32")
    bias = rng.standard_normal(columns).astype("float32")
    x = rng.standard_normal((16, 2048)).astype("float32")
    with kg.tidy():
        whole_kernel, whole_bias = matmul.upload_dense(kernel, bias, kg.tensor)
        assert isinstance(whole_kernel, kg.Tensor)
        unsplit = matmul.dense(kg.tensor(x), whole_kernel, whole_bias, "relu").numpy()
        with settings.override(max_storage_block=1 << 18):
            split_kernel, none = matmul.upload_dense(kernel, bias, kg.tensor)
            assert none is None and len(split_kernel.pieces) >= 2
            assert all(p.nbytes <= 1 << 18 for _, p, _ in split_kernel.pieces)
            split = matmul.dense(kg.tensor(x), split_kernel, None, "relu").numpy()
        split_kernel.dispose()
    np.testing.assert_array_equal(split, unsplit)
    reference = np.maximum(x.astype(np.float64) @ kernel + bias, 0)
    np.testing.assert_allclose(split, reference, rtol=1e-4, atol=1e-4)


def test_a_kernel_that_cannot_be_split_names_its_layer(tmp_path):
    """One column of this kernel (2048 rows: 8 KiB) already exceeds a 4 KiB block: refused at
    load with a GPULimitError naming the layer, the shape and the limit."""
    model = keras.Sequential([keras.Input((2048,)), L.Dense(2, name="too_tall")], name="tall")
    path = _save(model, tmp_path)
    with settings.override(max_storage_block=4096):
        with pytest.raises(kg.GPULimitError, match=r"Layer 'too_tall' \(Dense\).*\[2048, 2\]"
                                                   r".*GL_MAX_SHADER_STORAGE_BLOCK_SIZE = 4096"):
            kg.load_model(path)


def test_one_sample_over_the_limit_is_told_no_batch_is_smaller(tmp_path):
    """A batch is split to fit; a single sample whose tensors exceed the limit cannot be, and its
    GPULimitError says so instead of advising a smaller batch (arrays and Tensors alike)."""
    model = keras.Sequential([keras.Input((64,)), L.Dense(4096)], name="wide")
    path = _save(model, tmp_path)
    x = _rand((3, 64))
    with settings.override(max_storage_block=SMALL_BLOCK):
        with kg.load_model(path) as loaded:      # [1, 4096] floats: 16 KiB, over 8 KiB
            for feed in (x[:1], x):
                with pytest.raises(kg.GPULimitError) as caught:
                    loaded.predict(feed, verbose=0)
                message = str(caught.value)
                assert "cannot run even one sample (input shape [64])" in message
                assert "[1, 4096]" in message and "= 8192 bytes" in message
                assert "smaller inputs" in message and "batch_size" not in message
            with kg.tidy():
                with pytest.raises(kg.GPULimitError, match="even one sample") as caught:
                    loaded.predict(kg.tensor(x[:1]), verbose=0)
                assert "batch_size" not in str(caught.value)
