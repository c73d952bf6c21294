"""Tensors stored as textures are read in place (shaders/texture_operand.glsl, kerasgl/ops/
storage_ops.py run_in_place) by the element-wise, per-channel, pooling and padding kernels, and
by matmul (every variant: A, and B and the bias where they are tensors, not weights), Dense, the
convolutions (conv2d.comp, conv_gemm.comp; input and residual) and the depthwise convolutions
(the row kernel and the tiled one): no
texture_to_buffer.comp copy before the op and, when every operand is a texture, the result is
written as a texture directly (no buffer_to_texture.comp after). Each case gives exactly what the
buffer path gives on the same inputs, and what numpy or Keras computes from them; sizes past one
texture row (GL_MAX_TEXTURE_SIZE texels) leave a partial last row."""
import math

import numpy as np
import pytest

from keras_ref import keras

import kerasgl as kg
from kerasgl import settings
from kerasgl.ops import conv, elementwise, matmul as matmul_ops, normalization, pool, spatial
from kerasgl.plans.recorder import written_bindings
from kerasgl.runtime import context

CONVERSIONS = ("texture_to_buffer.comp", "buffer_to_texture.comp")


def _texture_row() -> int:
    try:
        return context.limits().max_texture_size
    except kg.GLContextError:
        return 16384          # GL's least: without a context every test here skips (conftest.py)


# Texels in a texture row (GL_MAX_TEXTURE_SIZE: 16384 on llvmpipe): the cases "past a row" are
# sized from it, so that they wrap onto further rows, the last one partial, on any device.
ROW = _texture_row()
MIXED = [("texture", "buffer"), ("buffer", "texture"), ("texture", "texture")]


def rand(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def past_one_row(shape) -> bool:
    """Whether a tensor of this shape spans rows of its texture, the last one partial."""
    size = math.prod(shape)
    return size > ROW and size % ROW != 0


def profiled(fn, *args, **kwargs):
    with kg.profile(gpu_timing=False) as p:
        out = fn(*args, **kwargs)
    return out, p


def assert_in_place(p, out, storages):
    """The op ran as one dispatch, copied nothing, allocated its result and nothing else (no
    temporary buffer came and went), and returned a texture exactly when every tensor operand
    was one."""
    kernels = [e.kernel for e in p.events]
    assert len(kernels) == 1 and not kernels[0].startswith(CONVERSIONS), kernels
    assert "_TEXTURE" in kernels[0]          # the kernel's texture variant ran
    assert p.allocated_total == out.gl_object.nbytes and p.freed_total == 0, kernels
    expected = "texture" if all(s == "texture" for s in storages) else "buffer"
    assert out.storage == expected


def in_storage(array, storage):
    return kg.tensor(array, storage=storage)


# -------------------------------------------------------------------------------------------------
# Binary element-wise: binary_vec4.comp (4 | size: full and per-channel operands) and binary.comp
# (any size, broadcasting)
# -------------------------------------------------------------------------------------------------
BINARY_SHAPES = {
    "vec4": ((6, 8), (6, 8)),
    "vec4 channel": ((3, 5, 8), (8,)),
    "scalar path": ((3, 5, 7), (3, 5, 7)),
    "broadcast": ((5, 1, 3), (4, 3)),
    "vec4 past a row": ((2, ROW // 2 + 3, 4), (2, ROW // 2 + 3, 4)),
    "channel past a row": ((ROW // 2 + 3, 12), (12,)),
    "scalar path past a row": ((2 * ROW + 1,), (2 * ROW + 1,)),
}


@pytest.mark.parametrize("storages", MIXED, ids="-".join)
@pytest.mark.parametrize("case", BINARY_SHAPES)
def test_binary_reads_textures_in_place(case, storages):
    a_shape, b_shape = BINARY_SHAPES[case]
    a, b = rand(a_shape, 1), rand(b_shape, 2)
    with kg.tidy():
        expected = elementwise.sub(kg.tensor(a), kg.tensor(b)).numpy()
        out, p = profiled(elementwise.sub, in_storage(a, storages[0]), in_storage(b, storages[1]))
        assert_in_place(p, out, storages)
        np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(expected, a - b)


# -------------------------------------------------------------------------------------------------
# Concatenation: concat.comp, one dispatch per input, each read where it is stored
# -------------------------------------------------------------------------------------------------
CONCAT_STORAGES = [("texture", "texture", "texture"), ("texture", "buffer", "texture"),
                   ("buffer", "buffer", "texture")]


@pytest.mark.parametrize("storages", CONCAT_STORAGES, ids="-".join)
@pytest.mark.parametrize("shapes, axis", [
    (((2, 3, 5, 4), (2, 3, 5, 7), (2, 3, 5, 1)), -1),
    (((2, 4, 6), (2, 1, 6), (2, 3, 6)), 1),
    (((ROW // 2 + 3, 3), (ROW // 2 + 3, 2), (ROW // 2 + 3, 1)), -1)],
    ids=["channels", "middle axis", "past a row"])
def test_concatenate_reads_textures_in_place(shapes, axis, storages):
    """Each input read in place (one concat.comp dispatch per input, none a copy); the result a
    texture exactly when every input is one; numpy's concatenation."""
    from kerasgl.ops.merge import concatenate
    arrays = [rand(shape, seed) for seed, shape in enumerate(shapes)]
    with kg.tidy():
        with kg.profile(gpu_timing=False) as p:
            out = concatenate([in_storage(a, s) for a, s in zip(arrays, storages)], axis)
        kernels = [e.kernel for e in p.events]
        assert len(kernels) == 3 and all(k.split()[0] == "concat.comp" for k in kernels), kernels
        for kernel, storage in zip(kernels, storages):
            assert ("X_TEXTURE" in kernel.split()) == (storage == "texture"), kernel
        expected = "texture" if all(s == "texture" for s in storages) else "buffer"
        assert out.storage == expected
        assert all(("Y_TEXTURE" in k.split()) == (expected == "texture") for k in kernels)
        np.testing.assert_array_equal(out.numpy(), np.concatenate(arrays, axis))


@pytest.mark.parametrize("op, reference", [
    ("add", np.add), ("mul", np.multiply), ("div", np.divide), ("maximum", np.maximum),
    ("squared_difference", lambda x, y: (x - y) ** 2), ("arctan2", np.arctan2)])
@pytest.mark.parametrize("shape", [(4, 6), (3, 7)], ids=["vec4", "scalar path"])
def test_binary_ops_on_two_textures(op, reference, shape):
    a, b = rand(shape, 3), rand(shape, 4, 0.5, 3.0)
    with kg.tidy():
        expected = elementwise.binary(op, kg.tensor(a), kg.tensor(b)).numpy()
        out, p = profiled(elementwise.binary, op, in_storage(a, "texture"),
                          in_storage(b, "texture"))
        assert_in_place(p, out, ("texture", "texture"))
        np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_allclose(expected, reference(a, b), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(3, 5, 7), (8, 4), (2 * ROW + 1,)])
@pytest.mark.parametrize("number_first", [False, True])
def test_binary_with_a_number(shape, number_first):
    a = rand(shape, 5)
    with kg.tidy():
        args = (lambda t: (1.5, t)) if number_first else (lambda t: (t, 1.5))
        expected = elementwise.sub(*args(kg.tensor(a))).numpy()
        out, p = profiled(elementwise.sub, *args(in_storage(a, "texture")))
        assert_in_place(p, out, ("texture",))
        np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(expected, 1.5 - a if number_first else a - 1.5)


def test_keyword_operands_are_read_in_place_too():
    a, b = rand((4, 4), 6), rand((4, 4), 7)
    with kg.tidy():
        out, p = profiled(elementwise.binary, op="mul", a=in_storage(a, "texture"),
                          b=in_storage(b, "buffer"))
        assert_in_place(p, out, ("texture", "buffer"))
        np.testing.assert_array_equal(out.numpy(), a * b)


# -------------------------------------------------------------------------------------------------
# Unary element-wise (activations): unary.comp
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, reference", [
    ("relu", lambda x: np.maximum(x, 0)), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("tanh", np.tanh)])
@pytest.mark.parametrize("shape", [(3, 5, 7), (2 * ROW + 1,)])
def test_unary_reads_and_writes_textures_in_place(name, reference, shape):
    x = rand(shape, 8)
    with kg.tidy():
        expected = elementwise.unary(name, kg.tensor(x)).numpy()
        out, p = profiled(elementwise.unary, name, in_storage(x, "texture"))
        assert_in_place(p, out, ("texture",))
        np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_allclose(expected, reference(x), rtol=1e-5, atol=1e-6)


# -------------------------------------------------------------------------------------------------
# Per-channel maps: channel_affine.comp (vec4 when 4 | size; int32 x as r32i)
# -------------------------------------------------------------------------------------------------
AFFINE_SHAPES = {"vec4": (4, 6, 8), "scalar path": (3, 5, 3),
                 "vec4 past a row": (2, ROW // 8 + 1, 4, 4),
                 "scalar path past a row": (ROW // 16 + 1, 17, 3)}
PER_CHANNEL = {
    "scale_shift": (lambda x, p, q: normalization.scale_shift(x, p, q),
                    lambda x, p, q: x * p + q),
    "prelu": (lambda x, p, q: normalization.prelu(x, p),
              lambda x, p, q: np.maximum(x, 0) - p * np.maximum(-x, 0)),
    "standardize": (lambda x, p, q: normalization.standardize(x, q, p),
                    lambda x, p, q: (x - q) / p),
    "standardize invert": (lambda x, p, q: normalization.standardize(x, q, p, invert=True),
                           lambda x, p, q: q + x * p),
}
AFFINE_STORAGES = [("texture", "buffer"), ("buffer", "texture"), ("texture", "texture")]


def _per_channel_case(op, shape, storages, x):
    run, reference = PER_CHANNEL[op]
    c = shape[-1]
    p, q = rand((c,), 10, 0.5, 2.0), rand((c,), 11)
    with kg.tidy():
        expected = run(kg.tensor(x), kg.tensor(p), kg.tensor(q)).numpy()
        x_storage, params = storages
        out, prof = profiled(run, in_storage(x, x_storage), in_storage(p, params),
                             in_storage(q, params))
        assert_in_place(prof, out, storages)
        np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_allclose(expected, reference(x.astype(np.float32), p, q),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("storages", AFFINE_STORAGES, ids="-".join)
@pytest.mark.parametrize("shape", AFFINE_SHAPES.values(), ids=AFFINE_SHAPES)
@pytest.mark.parametrize("op", PER_CHANNEL)
def test_per_channel_maps_read_textures_in_place(op, shape, storages):
    _per_channel_case(op, shape, storages, rand(shape, 9))


@pytest.mark.parametrize("storages", [("texture", "buffer"), ("texture", "texture")],
                         ids="-".join)
@pytest.mark.parametrize("shape", [(3, 5, 3), (ROW // 16 + 1, 17, 3), (4, 6, 8)])
def test_an_int32_input_is_read_in_place_as_r32i(shape, storages):
    x = np.random.default_rng(12).integers(-300, 300, shape).astype(np.int32)
    _per_channel_case("scale_shift", shape, storages, x)


# -------------------------------------------------------------------------------------------------
# Pooling, global pooling, padding and cropping: per_cell_input.glsl's kernels
# -------------------------------------------------------------------------------------------------
WINDOW_SHAPES = {"vec4": (2, 9, 11, 8), "scalar path": (2, 9, 11, 3),
                 "vec4 past a row": (1, ROW // 256 + 1, 81, 4),
                 "scalar path past a row": (1, ROW // 256 + 3, 90, 3)}
WINDOW_OPS = {
    "max 2x2/2": (lambda x: pool.pool2d(x, "max", (2, 2), (2, 2)),
                  lambda x: keras.ops.max_pool(x, (2, 2), (2, 2), "valid")),
    "avg 3x3/1 same": (lambda x: pool.pool2d(x, "avg", (3, 3), (1, 1), "same"),
                       lambda x: keras.ops.average_pool(x, (3, 3), (1, 1), "same")),
    "max with zero padding": (
        lambda x: pool.pool2d(x, "max", (2, 2), (2, 2), zero_padding=((1, 0), (0, 1))),
        lambda x: keras.ops.max_pool(np.pad(x, ((0, 0), (1, 0), (0, 1), (0, 0))), (2, 2), (2, 2),
                                     "valid")),
    "global avg keepdims": (lambda x: pool.global_pool(x, "avg", keepdims=True),
                            lambda x: x.mean(axis=(1, 2), keepdims=True)),
    "global max": (lambda x: pool.global_pool(x, "max"), lambda x: x.max(axis=(1, 2))),
    "pad and crop": (lambda x: spatial.pad_crop2d(x, (1, -1), (2, 0)),
                     lambda x: np.pad(x, ((0, 0), (1, 0), (2, 0), (0, 0)))[:, :-1]),
}


@pytest.mark.parametrize("shape", WINDOW_SHAPES.values(), ids=WINDOW_SHAPES)
@pytest.mark.parametrize("op", WINDOW_OPS)
def test_window_kernels_read_textures_in_place(op, shape):
    run, reference = WINDOW_OPS[op]
    x = rand(shape, 13)
    with kg.tidy():
        expected = run(kg.tensor(x)).numpy()
        out, p = profiled(run, in_storage(x, "texture"))
        assert_in_place(p, out, ("texture",))
        np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_allclose(expected, np.asarray(reference(x)), rtol=1e-5, atol=1e-5)


# -------------------------------------------------------------------------------------------------
# Matmul (matmul.comp in its variants, matmul_tiled.comp) and Dense
# -------------------------------------------------------------------------------------------------
MATMUL_TUNINGS = {
    "default": "",
    "scalar loads": "matmul_tiled=0,matmul_as_conv=0,matmul_views=0",
    "views": "matmul_tiled=0,matmul_as_conv=0,matmul_views=1",
    "tiled": "matmul_tiled=1,matmul_as_conv=0",
    "tiled views": "matmul_tiled=1,matmul_as_conv=0,matmul_views=1,gemm_tile_m=32,"
                   "gemm_tile_n=128,gemm_block_n=8,gemm_tile_k=8",
}
# (a shape, b shape, transpose_b)
MATMUL_SHAPES = {
    "2d vec4": ((33, 40), (40, 24), False),
    "2d scalar path": ((7, 13), (13, 5), False),
    "batched": ((3, 17, 12), (3, 12, 20), False),
    "broadcast, b transposed": ((2, 1, 19, 8), (3, 20, 8), True),
    "a past a row": ((ROW // 40 + 3, 40), (40, 20), False),
    "b past a row": ((18, 8), (8, ROW // 8 + 4), False),
}


def _matmul_case(tuning, shape, storages, with_bias):
    a_shape, b_shape, tb = MATMUL_SHAPES[shape]
    n = b_shape[-2] if tb else b_shape[-1]
    a, b, bias = rand(a_shape, 20), rand(b_shape, 21), rand((n,), 22)
    with settings.override(tuning=MATMUL_TUNINGS[tuning]), kg.tidy():
        def run(a, b, bias):
            return matmul_ops.matmul(a, b, bias if with_bias else None, "relu", transpose_b=tb)
        expected = run(kg.tensor(a), kg.tensor(b), kg.tensor(bias)).numpy()
        out, p = profiled(run, in_storage(a, storages[0]), in_storage(b, storages[1]),
                          in_storage(bias, storages[1]))
        assert_in_place(p, out, storages)
        np.testing.assert_array_equal(out.numpy(), expected)
    reference = np.matmul(a, np.swapaxes(b, -1, -2) if tb else b) + (bias if with_bias else 0)
    np.testing.assert_allclose(expected, np.maximum(reference, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("storages", MIXED, ids="-".join)
@pytest.mark.parametrize("shape", MATMUL_SHAPES)
@pytest.mark.parametrize("tuning", MATMUL_TUNINGS)
def test_matmul_reads_textures_in_place(tuning, shape, storages):
    _matmul_case(tuning, shape, storages, with_bias=False)


@pytest.mark.parametrize("storages", MIXED, ids="-".join)
@pytest.mark.parametrize("tuning", ["default", "tiled"])
@pytest.mark.parametrize("shape", ["2d vec4", "2d scalar path", "b past a row"])
def test_matmul_reads_a_texture_bias_in_place(shape, tuning, storages):
    # The bias in b's storage: all three textures give a texture, written in place.
    _matmul_case(tuning, shape, storages, with_bias=True)


@pytest.mark.parametrize("tuning", ["default", "tiled", "views"])
@pytest.mark.parametrize("x_shape", [(3, 5, 24), (ROW // 24 + 3, 24)], ids=["3d", "past a row"])
def test_dense_reads_a_texture_input_in_place(x_shape, tuning):
    x = rand(x_shape, 23)
    kernel, bias = rand((24, 16), 24), rand((16,), 25)
    with settings.override(tuning=MATMUL_TUNINGS[tuning]), kg.tidy():
        w, b = kg.tensor(kernel), kg.tensor(bias)
        expected = matmul_ops.dense(kg.tensor(x), w, b, "relu").numpy()
        out, p = profiled(matmul_ops.dense, in_storage(x, "texture"), w, b, "relu")
        assert_in_place(p, out, ("texture", "buffer"))
        np.testing.assert_array_equal(out.numpy(), expected)
    layer = keras.layers.Dense(16, activation="relu")
    layer.build(x_shape)
    layer.set_weights([kernel, bias])
    np.testing.assert_allclose(expected, np.asarray(layer(x)), rtol=1e-5, atol=1e-5)


def test_a_large_matmul_on_the_convolution_kernel_reads_a_texture_in_place():
    # llvmpipe's matmul_as_conv: A (a texture) is the convolution's input, read in place; B and
    # the bias are its weights (buffers), so the result is a buffer.
    a, b, bias = rand((64, 256), 26), rand((256, 128), 27), rand((128,), 28)
    with settings.override(tuning="matmul_as_conv=1"), kg.tidy():
        w, c = kg.tensor(b), kg.tensor(bias)
        expected = matmul_ops.matmul(kg.tensor(a), w, c).numpy()
        out, p = profiled(matmul_ops.matmul, in_storage(a, "texture"), w, c)
        # conv2d.comp (llvmpipe), or conv_gemm.comp where the tuning runs convolutions as GEMMs
        assert p.events[0].kernel.startswith(("conv2d.comp", "conv_gemm.comp"))
        assert_in_place(p, out, ("texture", "buffer"))
        np.testing.assert_array_equal(out.numpy(), expected)
    # float32 sums of 256 products up to 4 against float64's: 2.2e-5 at most (outputs to 82)
    np.testing.assert_allclose(expected, a.astype(np.float64) @ b + bias, rtol=1e-4, atol=1e-4)


def test_a_texture_b_of_a_large_matmul_runs_on_the_matmul_kernel():
    # B a texture cannot be the convolution kernel's weights: matmul.comp (matmul_tiled.comp
    # where the tuning says so) reads it in place.
    a, b = rand((64, 256), 29), rand((256, 128), 30)
    with settings.override(tuning="matmul_as_conv=1"), kg.tidy():
        expected = matmul_ops.matmul(kg.tensor(a), kg.tensor(b)).numpy()
        out, p = profiled(matmul_ops.matmul, kg.tensor(a), in_storage(b, "texture"))
        assert p.events[0].kernel.startswith(("matmul.comp", "matmul_tiled.comp"))
        assert_in_place(p, out, ("buffer", "texture"))
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-4)


# -------------------------------------------------------------------------------------------------
# Convolutions: conv2d.comp (its views and scalar-input variants) and conv_gemm.comp
# -------------------------------------------------------------------------------------------------
CONV_TUNINGS = {
    "default": ("", None),           # the device's choice (llvmpipe: conv2d.comp; plain: GEMM)
    "input views": ("conv_gemm=0,conv_input_image=1,conv_weights_image=1", "conv2d.comp"),
    "no views": ("conv_gemm=0,conv_input_image=0,conv_weights_image=0", "conv2d.comp"),
    "implicit gemm": ("matmul_tiled=1,matmul_as_conv=0,conv_gemm=1", "conv_gemm.comp"),
    "implicit gemm views": ("matmul_tiled=1,matmul_as_conv=0,conv_gemm=1,conv_weights_image=1,"
                            "conv_input_image=1,gemm_tile_m=32,gemm_tile_n=128,gemm_block_n=8,"
                            "gemm_tile_k=32", "conv_gemm.comp"),
}
# (x shape, kernel size, strides, padding ((top, bottom), (left, right)), filters)
CONV_CASES = {
    "1x1": ((2, 6, 7, 8), 1, (1, 1), ((0, 0), (0, 0)), 12),
    "3x3 strided same": ((2, 9, 11, 8), 3, (2, 2), ((1, 1), (1, 1)), 16),
    "3x3 scalar input": ((1, 9, 9, 3), 3, (2, 2), ((0, 1), (0, 1)), 8),
    "3x3 past a row": ((1, ROW // 64 + 1, 8, 8), 3, (1, 1), ((1, 1), (1, 1)), 8),
}


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("tuning", CONV_TUNINGS)
def test_conv2d_reads_a_texture_input_in_place(tuning, case):
    setting, kernel_name = CONV_TUNINGS[tuning]
    shape, size, strides, padding, filters = CONV_CASES[case]
    x = rand(shape, 31)
    weights, bias = rand((size, size, shape[-1], filters), 32), rand((filters,), 33)
    with settings.override(tuning=setting), kg.tidy():
        kernel = conv.pack_conv(weights, bias, 1, kg.tensor)     # packed for this tuning
        relu = conv.Pointwise("act_relu")
        expected = conv.conv2d(kg.tensor(x), kernel, strides, padding=padding,
                               activation=relu).numpy()
        out, p = profiled(conv.conv2d, in_storage(x, "texture"), kernel, strides,
                          padding=padding, activation=relu)
        assert_in_place(p, out, ("texture",))
        if kernel_name and shape[-1] % 4 == 0:   # conv_gemm.comp takes whole vec4s of channels
            assert p.events[0].kernel.startswith(kernel_name)
        np.testing.assert_array_equal(out.numpy(), expected)
    padded = np.pad(x, ((0, 0),) + tuple(padding) + ((0, 0),))
    reference = keras.ops.conv(padded, weights, strides, "valid") + bias
    np.testing.assert_allclose(expected, np.maximum(np.asarray(reference), 0), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("storages", MIXED, ids="-".join)
@pytest.mark.parametrize("tuning", ["default", "input views", "implicit gemm views"])
def test_conv2d_reads_a_texture_residual_in_place(tuning, storages):
    setting, _ = CONV_TUNINGS[tuning]
    x, weights, bias = rand((2, 6, 5, 8), 34), rand((3, 3, 8, 8), 35), rand((8,), 36)
    residual = rand((2, 6, 5, 8), 37)
    padding = ((1, 1), (1, 1))
    with settings.override(tuning=setting), kg.tidy():
        kernel = conv.pack_conv(weights, bias, 1, kg.tensor)
        expected = conv.conv2d(kg.tensor(x), kernel, padding=padding,
                               residual=kg.tensor(residual)).numpy()
        out, p = profiled(conv.conv2d, in_storage(x, storages[0]), kernel, padding=padding,
                          residual=in_storage(residual, storages[1]))
        assert_in_place(p, out, storages)
        np.testing.assert_array_equal(out.numpy(), expected)
    reference = keras.ops.conv(x, weights, 1, "same") + bias + residual
    np.testing.assert_allclose(expected, np.asarray(reference), rtol=1e-4, atol=1e-4)


# -------------------------------------------------------------------------------------------------
# Depthwise convolutions: the row kernel and the tiled one (depthwise_conv2d_tiled.glsl)
# -------------------------------------------------------------------------------------------------
DEPTHWISE_TUNINGS = {"row": "depthwise_tiled=0,depthwise_views=0",
                     "row views": "depthwise_tiled=0,depthwise_views=1",
                     "tiled": "depthwise_tiled=1"}
# (x shape, kernel size, multiplier, strides, padding)
DEPTHWISE_CASES = {
    "vec4 3x3": ((2, 9, 10, 8), 3, 1, (1, 1), ((1, 1), (1, 1))),
    "vec4 strided": ((1, 11, 9, 12), 3, 1, (2, 2), ((0, 1), (0, 1))),
    "scalar, multiplier 2": ((2, 7, 8, 3), 3, 2, (1, 1), ((1, 1), (1, 1))),
    "vec4 past a row": ((1, ROW // 64 + 1, 8, 8), 3, 1, (1, 1), ((1, 1), (1, 1))),
}


@pytest.mark.parametrize("case", DEPTHWISE_CASES)
@pytest.mark.parametrize("tuning", DEPTHWISE_TUNINGS)
def test_depthwise_reads_a_texture_input_in_place(tuning, case):
    shape, size, mult, strides, padding = DEPTHWISE_CASES[case]
    x = rand(shape, 38)
    weights, bias = rand((size, size, shape[-1], mult), 39), rand((shape[-1] * mult,), 40)
    with settings.override(tuning=DEPTHWISE_TUNINGS[tuning]), kg.tidy():
        kernel = conv.pack_depthwise(weights, bias, kg.tensor)
        relu = conv.Pointwise("act_relu")
        expected = conv.depthwise_conv2d(kg.tensor(x), kernel, strides, padding=padding,
                                         activation=relu).numpy()
        out, p = profiled(conv.depthwise_conv2d, in_storage(x, "texture"), kernel, strides,
                          padding=padding, activation=relu)
        assert_in_place(p, out, ("texture",))
        assert ("TILED" in p.events[0].kernel.split()) == (tuning == "tiled")
        np.testing.assert_array_equal(out.numpy(), expected)
    padded = np.pad(x, ((0, 0),) + tuple(padding) + ((0, 0),))
    reference = keras.ops.depthwise_conv(padded, weights, strides, "valid") + bias
    np.testing.assert_allclose(expected, np.maximum(np.asarray(reference), 0), rtol=1e-4,
                               atol=1e-4)


# -------------------------------------------------------------------------------------------------
# The cases above, and what stays as it was
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [{name: a for name, (a, _) in BINARY_SHAPES.items()},
                                    AFFINE_SHAPES, WINDOW_SHAPES,
                                    {n: a for n, (a, b, _) in MATMUL_SHAPES.items() if "b " not in n},
                                    {n: b for n, (a, b, _) in MATMUL_SHAPES.items() if "a " not in n},
                                    {n: c[0] for n, c in CONV_CASES.items()},
                                    {n: c[0] for n, c in DEPTHWISE_CASES.items()}],
                         ids=["binary", "affine", "window", "matmul a", "matmul b", "conv",
                              "depthwise"])
def test_the_cases_past_a_row_span_rows_of_their_textures(shapes):
    spanning = [name for name, shape in shapes.items() if past_one_row(shape)]
    assert spanning == [name for name in shapes if "past a row" in name]


def test_an_op_without_an_image_path_still_copies_a_texture_operand():
    # layer_norm.comp reads storage buffers only: its texture input is copied first, and its
    # result (every operand was a texture) copied into a texture after, as before.
    x = rand((3, 8), 14)
    with kg.tidy():
        expected = normalization.layer_norm(kg.tensor(x)).numpy()
        out, p = profiled(normalization.layer_norm, in_storage(x, "texture"))
        kernels = [e.kernel.split()[0] for e in p.events]
        assert kernels[0] == "texture_to_buffer.comp" and kernels[-1] == "buffer_to_texture.comp"
        assert out.storage == "texture"
        np.testing.assert_array_equal(out.numpy(), expected)


def test_a_chain_of_texture_ops_makes_no_copies():
    x, s, t = rand((2, 12, 12, 8), 15), rand((8,), 16, 0.5, 2.0), rand((8,), 17)
    with kg.tidy():
        expected = pool.global_pool(
            pool.pool2d(elementwise.unary("relu", normalization.scale_shift(
                kg.tensor(x), kg.tensor(s), kg.tensor(t))), "max", (2, 2), (2, 2)), "avg").numpy()
        textures = [in_storage(v, "texture") for v in (x, s, t)]
        with kg.profile(gpu_timing=False) as p:
            out = pool.global_pool(pool.pool2d(elementwise.unary(
                "relu", normalization.scale_shift(*textures)), "max", (2, 2), (2, 2)), "avg")
        assert [e.kernel.split()[0] for e in p.events] == [
            "channel_affine.comp", "unary.comp", "pool2d.comp", "global_pool.comp"]
        assert out.storage == "texture"
        np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("shader, output", [
    ("binary.comp", 2), ("binary_vec4.comp", 2), ("unary.comp", 1), ("channel_affine.comp", 3),
    ("pool2d.comp", 1), ("global_pool.comp", 1), ("pad_crop2d.comp", 1), ("matmul.comp", 3),
    ("matmul_tiled.comp", 3), ("conv2d.comp", 3), ("conv_gemm.comp", 3),
    ("depthwise_conv2d.comp", 3)])
def test_the_kernels_still_write_only_their_output_binding(shader, output):
    # Execution plans find the storage buffers a kernel writes from its text: a stand-in bound
    # where a texture operand is read must not count as written, or no plan could be made.
    assert written_bindings(shader, {}) == {output}
