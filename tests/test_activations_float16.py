"""kg.load_model(path, activation_dtype="float16"): a model's float32 activations kept between
layers as IEEE halves in r16f textures (tensors/tensor.py HALF_TEXTURE, ops/half_activations.py),
read and written in place by the kernels that take textures (shaders/texture_operand.glsl).

1. The rounding as a kernel stores halves (buffer_to_texture.comp, and binary_vec4.comp writing
   its result in place): float32s over halves' whole range and past it (below the subnormal
   halves, subnormals, ties to even both ways, 65520 and beyond to infinity, zeros, infinities,
   NaN). With half_store_rounding=1 (llvmpipe's tuning: the shader rounds, half_rounded) each is
   numpy's astype(float16) bit for bit; with half_store_rounding=0 (the store's own conversion:
   llvmpipe's truncates, a GPU's rounds) within one spacing of halves of numpy's, infinities and
   NaN kept: nothing stronger is promised (values past the largest half are left out there:
   llvmpipe's store clamps them to 65504).
2. Every kernel family with an in-place image path (matmul.comp, matmul_tiled.comp, Dense through
   views, conv2d.comp, conv_gemm.comp, the depthwise row and tiled kernels, binary.comp,
   binary_vec4.comp, unary.comp, channel_affine.comp, pool2d, global pool, pad/crop), its inputs
   textures of halves, inside a float16-activation run: one dispatch, every image bound r16f
   (HALF_TEXTURE_<unit>), no conversion, a texture of halves out. Reference: the same kerasgl op
   on float32 buffers holding the half-rounded inputs (the buffer path tests/
   test_texture_operands.py checks against numpy and Keras), its result rounded by numpy: equal
   bit for bit where the kernel rounds its stores, within one spacing where the store converts.
3. Whole models against Keras (JAX): keras_ref.answers_with_half_activations runs the Keras model
   layer by layer (through nested models) rounding every float output to float16, the emulation
   of the option. kerasgl fuses layers (Conv2D + BatchNormalization + ReLU into one convolution,
   the 1x1 convolution with the residual Add, a Dense with its activation) and so rounds fewer
   values than the emulation. Measured over seeds 0..11 of these models' random weights, in
   spacings of halves at the output's largest magnitude: at most 1 where stores round to nearest
   (llvmpipe's policy), 4 where they truncate (KERASGL_DEVICE_POLICY=plain on llvmpipe: each
   store's error biased toward zero, through six layers). The bound (model_ulps): 2 and 8.
   With fusion off the CNN gives the emulation's answer bit for bit at every seed tried (bound:
   one spacing). A softmax of large logits magnifies their differences (the CNN with a softmax
   head reached 12 spacings at one seed): the CNN answers logits; the MLP's softmax sees small
   ones. Every float output is also checked to be halves only, and to differ from Keras's
   float32 answer (the option took effect). The models cover kernels that read buffers only
   (attention, LayerNormalization: float32 copies and back), LSTM and GRU, concatenation, a
   nested model, several outputs and an int32 one.
4. Plans record and replay the half variants; a conv net's plan holds about half the activation
   memory; nothing is left on the GPU after dispose.
5. The option: refusals, the model.activation_dtype setter (which frees the plans),
   load_model_from_json, a Worker, storage_dtype="float16" together.

tests/test_plain_policy.py runs this file again under the plain policy's tuning.
"""
import contextlib
import threading

import numpy as np
import pytest

import kerasgl as kg
from kerasgl import settings
from kerasgl.compiler import fusion
from kerasgl.ops import conv, elementwise, half_activations, normalization, pool, spatial
from kerasgl.ops import matmul as matmul_ops
from kerasgl.ops.storage_ops import to_texture
from kerasgl.runtime import context, tuning
from half_activation_ref import half_ulp, model_ulps
from keras_ref import (answers_with_half_activations, as_list, assert_close, keras,
                       random_inputs, randomize_weights, rounded_to_half)

L = keras.layers


def half(a):
    """numpy's float16 of a float32 array (round to nearest, ties to even), as float32."""
    with np.errstate(over="ignore"):
        return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)


def halves_bits(values):
    """The float16 bit patterns of float32 values that are halves (exactly: a half's float32)."""
    return np.asarray(values, np.float32).astype(np.float16).view(np.uint16)


def is_halves(values) -> bool:
    """Whether every value of a float32 array is exactly a half (or NaN)."""
    values = np.asarray(values, np.float32)
    back = half(values)
    return bool(np.all((back == values) | (np.isnan(back) & np.isnan(values))))


def rounds_in_shader() -> bool:
    """Whether this device's tuning rounds stores to halves in the shader (llvmpipe's policy)."""
    return tuning.current().half_store_rounding


# -------------------------------------------------------------------------------------------------
# 1. Rounding to halves as a kernel stores them
# -------------------------------------------------------------------------------------------------
def wide_float32s():
    """float32 values over halves' whole range and past it: random magnitudes 2^-30 .. 2^17 of
    either sign (below the subnormal halves, subnormals, normals, past 65504), the ties halfway
    between neighbouring halves (even and odd, subnormal and normal, 65520 between the largest
    half and infinity), the largest value rounding to it, zeros, infinities, NaN."""
    rng = np.random.default_rng(0)
    n = 8192
    wide = (rng.choice([-1.0, 1.0], n) * rng.uniform(1.0, 2.0, n)
            * 2.0 ** rng.integers(-30, 18, n)).astype(np.float32)
    finite_halves = np.arange(0x7bff, dtype=np.uint16).view(np.float16)   # 0 .. below 65504
    lower = rng.choice(finite_halves, 2048)
    upper = np.nextafter(lower, np.float16(np.inf))
    ties = ((lower.astype(np.float64) + upper.astype(np.float64)) / 2).astype(np.float32)
    assert np.all(ties.astype(np.float64) * 2 == lower.astype(np.float64) + upper)   # exact ties
    # ties to even go both ways: up from an odd half, down to an even one
    assert np.any(half(ties) > ties) and np.any(half(ties) < ties)
    ties = ties * rng.choice([-1.0, 1.0], ties.size).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.996, 65520.0, -65520.0,
                        1e6, -3.4e38, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -26,
                        -2.0 ** -25, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -25, 1e-40, -1e-40],
                       np.float32)
    return np.concatenate([wide, ties, special]).astype(np.float32)


# route -> the kernel storing the halves, and its define for a texture of halves written
STORING = {"conversion": ("buffer_to_texture.comp", "HALF"),
           "in place": ("binary_vec4.comp", "HALF_TEXTURE_2")}


def stored_halves(route, x):
    """x written into a texture of halves by a kernel, read back: by buffer_to_texture.comp
    (to_texture(half=True)), or by binary_vec4.comp writing its result in place (x * 1, exact,
    inside a float16-activation run). Returns (the values, the kernel that stored them)."""
    with kg.tidy():
        with kg.profile(gpu_timing=False) as p:
            if route == "conversion":
                out = to_texture(kg.tensor(x), half=True)
            else:
                source = kg.tensor(x, storage="texture")          # float32 texels
                with half_activations.running("float16"):
                    out = elementwise.mul(source, 1.0)
        assert out.storage == "texture" and out.storage_dtype == "float16"
        assert out.nbytes == 2 * x.size
        return out.numpy(), p.events[-1].kernel


@pytest.mark.parametrize("route", ["conversion", "in place"])
def test_rounding_stores_give_numpys_halves(route):
    """half_store_rounding=1: every value bit for bit numpy's float16 of it (NaN as NaN)."""
    x = wide_float32s()
    with settings.override(tuning="half_store_rounding=1"):
        got, kernel = stored_halves(route, x)
    assert "HALF_STORE_ROUNDING" in kernel.split(), kernel
    assert kernel.split()[0] == STORING[route][0] and STORING[route][1] in kernel.split(), kernel
    expected = half(x)
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(got), nan)
    mismatched = halves_bits(got[~nan]) != halves_bits(expected[~nan])
    assert not mismatched.any(), (x[~nan][mismatched][:8], got[~nan][mismatched][:8])


@pytest.mark.parametrize("route", ["conversion", "in place"])
def test_hardware_stores_are_within_one_half_ulp(route):
    """half_store_rounding=0, the store's own conversion (llvmpipe truncates): each value whose
    float16 is finite within one spacing of halves of numpy's; infinities and NaN kept."""
    x = wide_float32s()
    with settings.override(tuning="half_store_rounding=0"):
        got, kernel = stored_halves(route, x)
    assert "HALF_STORE_ROUNDING" not in kernel.split(), kernel
    assert kernel.split()[0] == STORING[route][0] and STORING[route][1] in kernel.split(), kernel
    assert is_halves(got)
    expected = half(x)
    finite = np.isfinite(expected)
    off = np.abs(got[finite].astype(np.float64) - expected[finite])
    assert np.all(off <= half_ulp(expected[finite])), off.max()
    for value in (np.inf, -np.inf):
        assert np.all(got[x == value] == value)
    assert np.all(np.isnan(got[np.isnan(x)]))


# -------------------------------------------------------------------------------------------------
# 2. Kernels reading and writing halves in place
# -------------------------------------------------------------------------------------------------
def rand(shape, seed, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


RELU = conv.Pointwise("act_relu")
SIGMOID = conv.Pointwise("act_sigmoid")


def _operands(run, *shapes):
    """A case whose every input is a tensor of these shapes (1-D ones, per-channel parameters,
    in [0.5, 2))."""
    def make():
        return run, [rand(s, 50 + i, *((0.5, 2.0) if i and len(s) == 1 else ()))
                     for i, s in enumerate(shapes)]
    return make


def _dense(x_shape, n):
    """Dense on an input of x_shape: the kernel and bias float32 buffers, as a layer's."""
    def make():
        w, b = kg.tensor(rand((x_shape[-1], n), 24)), kg.tensor(rand((n,), 25))
        return lambda x: matmul_ops.dense(x, w, b, "relu"), [rand(x_shape, 23)]
    return make


def _conv(shape, size, strides, padding, filters, residual):
    """A Conv2D (weights packed for the tuning in force) with ReLU, and a residual input."""
    def make():
        weights = rand((size, size, shape[-1], filters), 32)
        kernel = conv.pack_conv(weights, rand((filters,), 33), 1, kg.tensor)

        def run(x, *rest):
            return conv.conv2d(x, kernel, strides, padding=padding, activation=RELU,
                               residual=rest[0] if rest else None)
        out_hw = [(shape[1 + i] + sum(padding[i]) - size) // strides[i] + 1 for i in (0, 1)]
        arrays = [rand(shape, 31)] + ([rand((shape[0], *out_hw, filters), 34)] if residual else [])
        return run, arrays
    return make


def _depthwise(shape, mult, strides, padding):
    def make():
        weights = rand((3, 3, shape[-1], mult), 39)
        kernel = conv.pack_depthwise(weights, rand((shape[-1] * mult,), 40), kg.tensor)
        return (lambda x: conv.depthwise_conv2d(x, kernel, strides, padding=padding,
                                                activation=SIGMOID)), [rand(shape, 38)]
    return make


MATMUL = {"scalar loads": "matmul_tiled=0,matmul_as_conv=0,matmul_views=0",
          "views": "matmul_tiled=0,matmul_as_conv=0,matmul_views=1",
          "tiled": "matmul_tiled=1,matmul_as_conv=0,matmul_views=1"}
CONV = {"conv2d views": "conv_gemm=0,conv_input_image=1,conv_weights_image=1",
        "conv2d": "conv_gemm=0,conv_input_image=0,conv_weights_image=0",
        "conv_gemm": "matmul_tiled=1,matmul_as_conv=0,conv_gemm=1"}
DEPTHWISE = {"row": "depthwise_tiled=0,depthwise_views=0",
             "row views": "depthwise_tiled=0,depthwise_views=1",
             "tiled": "depthwise_tiled=1"}
BIASED_MATMUL = (lambda a, b, c: matmul_ops.matmul(a, b, c, "relu"), (33, 40), (40, 24), (24,))
# (A large Dense on llvmpipe's matmul_as_conv reads its halves in place but writes a float32
# buffer, converted after: ops/matmul.py _matmul_as_conv; not among these cases.)

# name -> (tuning, make() -> (run, its input arrays), the kernel that must run, its defines)
KERNEL_CASES = {
    "matmul": (MATMUL["scalar loads"], _operands(*BIASED_MATMUL), "matmul.comp", ()),
    "matmul tiled": (MATMUL["tiled"], _operands(*BIASED_MATMUL), "matmul_tiled.comp", ()),
    "matmul scalar path, b transposed": (
        MATMUL["scalar loads"],
        _operands(lambda a, b: matmul_ops.matmul(a, b, transpose_b=True), (2, 7, 13), (2, 5, 13)),
        "matmul.comp", ()),
    "dense": (MATMUL["scalar loads"], _dense((3, 5, 24), 16), "matmul.comp", ()),
    "dense views": (MATMUL["views"], _dense((3, 5, 24), 16), "matmul.comp", ("B_VIEW",)),
    "dense tiled": (MATMUL["tiled"], _dense((4, 5, 24), 16), "matmul_tiled.comp", ("B_VIEW",)),
    **{f"{name} with residual": (setting, _conv((2, 9, 11, 8), 3, (2, 2), ((1, 1), (1, 1)), 16,
                                                True), name.split()[0] + ".comp", ("RESIDUAL",))
       for name, setting in CONV.items()},
    "conv2d 3-channel input": (CONV["conv2d"], _conv((1, 9, 9, 3), 3, (1, 1), ((0, 0), (0, 0)),
                                                     8, False), "conv2d.comp", ()),
    **{f"depthwise {name}": (setting, _depthwise((2, 9, 10, 8), 1, (1, 1), ((1, 1), (1, 1))),
                             "depthwise_conv2d.comp", ("TILED",) if name == "tiled" else ())
       for name, setting in DEPTHWISE.items()},
    "depthwise scalar, multiplier 2": (DEPTHWISE["row"], _depthwise(
        (2, 7, 8, 3), 2, (2, 2), ((0, 1), (0, 1))), "depthwise_conv2d.comp", ()),
    "binary vec4": ("", _operands(elementwise.sub, (6, 8), (6, 8)), "binary_vec4.comp", ()),
    "binary vec4 per channel": ("", _operands(elementwise.mul, (3, 5, 8), (8,)),
                                "binary_vec4.comp", ("B_CHANNEL",)),
    "binary broadcast": ("", _operands(lambda a, b: elementwise.binary("arctan2", a, b),
                                       (5, 1, 3), (4, 3)), "binary.comp", ("BROADCAST",)),
    "unary": ("", _operands(lambda x: elementwise.unary("tanh", x), (3, 5, 7)), "unary.comp",
              ()),
    "channel_affine vec4": ("", _operands(normalization.scale_shift, (4, 6, 8), (8,), (8,)),
                            "channel_affine.comp", ("VEC4",)),
    "channel_affine scalar": ("", _operands(lambda x, a: normalization.prelu(x, a),
                                            (3, 5, 3), (3,)), "channel_affine.comp", ()),
    "max pool": ("", _operands(lambda x: pool.pool2d(x, "max", (2, 2), (2, 2)), (2, 9, 11, 8)),
                 "pool2d.comp", ("IS_MAX",)),
    "avg pool same": ("", _operands(lambda x: pool.pool2d(x, "avg", (3, 3), (1, 1), "same"),
                                    (2, 9, 11, 3)), "pool2d.comp", ()),
    "global avg pool": ("", _operands(lambda x: pool.global_pool(x, "avg"), (2, 9, 11, 8)),
                        "global_pool.comp", ()),
    "global max pool": ("", _operands(lambda x: pool.global_pool(x, "max", keepdims=True),
                                      (2, 9, 11, 3)), "global_pool.comp", ("IS_MAX",)),
    "pad and crop": ("", _operands(lambda x: spatial.pad_crop2d(x, (1, -1), (2, 0)),
                                   (2, 9, 11, 8)), "pad_crop2d.comp", ()),
}


@pytest.mark.parametrize("case", KERNEL_CASES)
def test_kernels_read_and_write_halves_in_place(case):
    """Every input a texture of halves, run inside a float16-activation run: one dispatch of the
    kernel's texture variant, every operand and the result bound as r16f (HALF_TEXTURE_<unit>),
    no conversion; the result a texture of halves. Reference: the same kerasgl op on float32
    buffers holding the half-rounded inputs, its float32 result rounded by numpy: equal where
    the kernel rounds its stores (llvmpipe's tuning), within one spacing of halves where the
    store converts (the plain policy's tuning on llvmpipe truncates)."""
    setting, make, kernel_name, required = KERNEL_CASES[case]
    with settings.override(tuning=setting) if setting else contextlib.nullcontext(), kg.tidy():
        run, arrays = make()
        rounded = [half(a) for a in arrays]
        expected = half(run(*[kg.tensor(r) for r in rounded]).numpy())
        halves = [to_texture(kg.tensor(r), half=True) for r in rounded]
        assert all(h.storage_dtype == "float16" for h in halves)
        with half_activations.running("float16"), kg.profile(gpu_timing=False) as p:
            out = run(*halves)
        kernels = [e.kernel for e in p.events]
        assert out.storage == "texture" and out.storage_dtype == "float16", kernels
        got = out.numpy()
    assert len(kernels) == 1 and kernels[0].split()[0] == kernel_name, kernels
    for k in kernels:
        defines = k.split()
        assert all(d in defines for d in required), k
        units = [d for d in defines if d.startswith("HALF_TEXTURE_")]
        images = [d for d in defines if d.endswith("_TEXTURE") and "=" not in d]
        # every operand and the result an image (NAME_TEXTURE), each bound as halves
        assert len(units) == len(images) >= len(halves) + 1, k
        assert ("HALF_STORE_ROUNDING" in defines) == rounds_in_shader(), k
    assert got.shape == expected.shape
    if rounds_in_shader():
        np.testing.assert_array_equal(got, expected)
    else:
        off = np.abs(got.astype(np.float64) - expected)
        assert np.all(off <= half_ulp(expected)), off.max()


# -------------------------------------------------------------------------------------------------
# 3. Whole models against Keras run with its activations rounded to halves
# -------------------------------------------------------------------------------------------------
def cnn():
    """Conv2D + BatchNormalization + ReLU (one fused convolution in kerasgl), a depthwise
    convolution, a 1x1 convolution with a residual Add, max pooling, a convolution, global
    average pooling, Dense logits."""
    x = keras.Input((12, 12, 3))
    y = L.Conv2D(16, 3, padding="same", use_bias=False, name="stem")(x)
    y = L.BatchNormalization(name="bn")(y)
    r = y = L.ReLU(name="stem_relu")(y)
    y = L.DepthwiseConv2D(3, padding="same", activation="relu", name="dw")(y)
    y = L.Conv2D(16, 1, name="pw")(y)
    y = L.Add(name="residual")([y, r])
    y = L.MaxPooling2D(2, name="pool")(y)
    y = L.Conv2D(24, 3, activation="relu", name="c2")(y)
    y = L.GlobalAveragePooling2D(name="gap")(y)
    return keras.Model(x, L.Dense(10, name="logits")(y), name="cnn16")


def mlp():
    return keras.Sequential([keras.Input((20,)), L.Dense(32, activation="gelu", name="d1"),
                             L.Dense(32, activation="tanh", name="d2"),
                             L.Dense(5, activation="softmax", name="probs")], name="mlp16")


def attention():
    """MultiHeadAttention and LayerNormalization: kernels that read buffers only, so their
    inputs are float32 copies of the halves and their results are converted back."""
    x = keras.Input((6, 16))
    a = L.MultiHeadAttention(2, 8, name="mha")(x, x)
    y = L.LayerNormalization(name="ln")(L.Add(name="skip")([x, a]))
    y = L.Dense(16, activation="relu", name="ffn")(y)
    return keras.Model(x, L.GlobalAveragePooling1D(name="gap")(y), name="attention16")


def recurrent():
    """An LSTM's sequences into a bidirectional GRU (its two directions concatenated)."""
    x = keras.Input((7, 5))
    y = L.LSTM(12, return_sequences=True, name="lstm")(x)
    y = L.Bidirectional(L.GRU(6), name="bigru")(y)
    return keras.Model(x, L.Dense(3, name="head")(y), name="recurrent16")


def multi():
    """A nested Sequential; outputs its float result, the argmax of it (int32), a softmax of it,
    and its concatenation with a Dense of the input."""
    inner = keras.Sequential([keras.Input((8,)), L.Dense(6, activation="relu", name="i1"),
                              L.Dense(4, name="i2")], name="inner")
    x = keras.Input((8,))
    h = inner(x)
    side = L.Dense(3, activation="sigmoid", name="side")(x)
    return keras.Model(x, [h, keras.ops.argmax(h, axis=-1), L.Softmax(name="sm")(h),
                           L.Concatenate(name="cat")([h, side])], name="multi16")


MODELS = {"cnn": cnn, "mlp": mlp, "attention": attention, "recurrent": recurrent,
          "multi": multi}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """name -> (the Keras model, random weights; its .keras file; inputs), made once a module."""
    folder, made = tmp_path_factory.mktemp("activations16"), {}

    def get(name):
        if name not in made:
            model = MODELS[name]()
            randomize_weights(model, seed=0)
            path = str(folder / f"{model.name}.keras")
            model.save(path)
            made[name] = (model, path, random_inputs(model, batch=3, seed=10))
        return made[name]
    return get


def keras_float32(model, inputs):
    return [np.asarray(a) for a in as_list(model.predict(
        inputs if len(inputs) > 1 else inputs[0], verbose=0))]


def assert_half_answers(actual, emulated, float32, what="", ulps=None):
    """Each float output: every value a half (stored as halves), within `ulps` (model_ulps())
    spacings of halves at Keras's float32 output's largest magnitude of the emulation, and not
    Keras's float32 answer (the option took effect). Returns the worst difference in spacings."""
    ulps = model_ulps() if ulps is None else ulps
    actual = as_list(actual)
    assert len(actual) == len(emulated) == len(float32), what
    worst = 0.0
    for i, (a, e, f) in enumerate(zip(actual, emulated, float32)):
        a = np.asarray(a)
        assert a.shape == e.shape, (what, i, a.shape, e.shape)
        if e.dtype != np.float32:
            continue
        assert a.dtype == np.float32, (what, i, a.dtype)
        assert is_halves(a), f"{what} output {i}: values that are not halves"
        spacing = half_ulp(np.abs(f).max())
        off = float(np.abs(a.astype(np.float64) - e).max()) / spacing
        assert off <= ulps, f"{what} output {i}: {off} spacings of halves off, at most {ulps}"
        assert np.any(a != f), f"{what} output {i}: Keras's float32 answer"
        worst = max(worst, off)
    return worst


@pytest.mark.parametrize("name", MODELS)
def test_models_match_keras_with_activations_rounded_to_halves(name, saved):
    model, path, inputs = saved(name)
    emulated = answers_with_half_activations(model, inputs)
    float32 = keras_float32(model, inputs)
    with kg.load_model(path, activation_dtype="float16") as loaded:
        assert loaded.activation_dtype == "float16"
        with kg.profile(gpu_timing=False) as p:
            actual = as_list(loaded.predict(inputs[0], verbose=0))
    assert_half_answers(actual, emulated, float32, name)
    kernels = [e.kernel.split() for e in p.events]
    names = [k[0] for k in kernels]
    assert any(d.startswith("HALF_TEXTURE_") for k in kernels for d in k), names
    floats = sum(e.dtype == np.float32 for e in emulated)
    if name in ("cnn", "mlp"):
        # Every layer read and wrote halves in place: the one conversion is the output's.
        assert names.count("texture_to_buffer.comp") == floats, names
        assert "buffer_to_texture.comp" not in names, names
    if name == "attention":
        # layer_norm.comp and the attention kernels read float32 copies of the halves.
        assert "layer_norm.comp" in names and "buffer_to_texture.comp" in names, names
        assert names.count("texture_to_buffer.comp") > floats, names
    if name == "recurrent":
        assert "rnn_recurrence.comp" in names, names
    if name == "multi":
        # The int output: the argmax of the float one (the same halves), as int32.
        np.testing.assert_array_equal(actual[1], np.argmax(actual[0], axis=-1))
        assert actual[1].dtype == np.int32


def test_without_fusion_kerasgl_rounds_where_the_emulation_does(saved):
    """Loaded with fusion off, every Keras layer of the CNN is one kerasgl layer writing halves,
    rounding where the emulation does: within one spacing of halves where stores round to
    nearest (measured: bit for bit, 12 seeds; a float32 sum summed in another order than XLA's
    may land on the other side of a midpoint between halves), model_ulps() where they truncate
    (measured 5 at most)."""
    model, path, inputs = saved("cnn")
    emulated = answers_with_half_activations(model, inputs)
    with fusion.disabled():
        loaded = kg.load_model(path, activation_dtype="float16")
    with loaded:
        actual = loaded.predict(inputs[0], verbose=0)
    assert_half_answers(actual, emulated, keras_float32(model, inputs), "cnn without fusion",
                        ulps=1 if rounds_in_shader() else model_ulps())


def test_with_float16_weights_too(saved):
    """storage_dtype="float16" with activation_dtype="float16": the emulation run with the
    weights kerasgl stores as halves rounded (keras_ref.rounded_to_half); convolutions reading
    halved weights and halved activations at once. Fusion off: fused, the BatchNormalization is
    folded into the convolution's kernel before kerasgl rounds the kernel to halves, a rounding
    the emulation (which rounds Keras's kernel) does not make. Measured 1 spacing of halves at
    most where stores round, 5 where they truncate (8 seeds)."""
    model, path, inputs = saved("cnn")
    with rounded_to_half(model):
        emulated = answers_with_half_activations(model, inputs)
    float32 = keras_float32(model, inputs)
    with fusion.disabled():
        loaded = kg.load_model(path, storage_dtype="float16", activation_dtype="float16")
    with loaded:
        assert (loaded.storage_dtype, loaded.activation_dtype) == ("float16", "float16")
        with kg.profile(gpu_timing=False) as p:
            actual = loaded.predict(inputs[0], verbose=0)
    assert_half_answers(actual, emulated, float32, "cnn, float16 weights")
    both = [e.kernel for e in p.events
            if "WEIGHTS_F16" in e.kernel.split() and "HALF_TEXTURE_" in e.kernel]
    assert any(k.startswith("conv2d.comp") or k.startswith("conv_gemm.comp") for k in both), \
        [e.kernel for e in p.events]
    # the weights' rounding shows: not the answer with float32 weights
    assert np.any(actual != answers_with_half_activations(model, inputs)[0])


# -------------------------------------------------------------------------------------------------
# 4. Plans and memory
# -------------------------------------------------------------------------------------------------
def _planned(path, x, activation_dtype):
    """Predict four times; (the answers, the plan's PlanInfo, kg.memory().planned_bytes)."""
    with kg.load_model(path, activation_dtype=activation_dtype) as loaded:
        answers = [loaded.predict(x, verbose=0) for _ in range(4)]
        (info,) = loaded.plan_info()
        return answers, info, kg.memory().planned_bytes


def test_plans_record_and_replay_the_half_variants(saved):
    """Calls 1 (eager), 2 (recorded), 3 and 4 (replayed): the same halves each time; the plan
    holds about half the activation memory of float32's (its peak live bytes exactly half here:
    three activations of the first stage alive at once)."""
    model, path, inputs = saved("cnn")
    before = kg.memory()
    answers16, info16, planned16 = _planned(path, inputs[0], "float16")
    answers32, info32, planned32 = _planned(path, inputs[0], "float32")
    for answers in (answers16, answers32):
        for a in answers[1:]:
            np.testing.assert_array_equal(a, answers[0])
    assert is_halves(answers16[0]) and not is_halves(answers32[0])
    assert info16.status == info32.status == "planned", (info16, info32)
    assert (planned16, planned32) == (info16.planned_bytes, info32.planned_bytes)
    assert 0 < info16.planned_bytes < 0.75 * info32.planned_bytes, (info16, info32)
    assert 0.45 <= info16.peak_live_bytes / info32.peak_live_bytes <= 0.55, (info16, info32)
    after = kg.memory()
    assert (after.num_tensors, after.num_bytes, after.planned_bytes) == (
        before.num_tensors, before.num_bytes, before.planned_bytes)
    assert after.num_textures == before.num_textures


def test_a_model_with_an_int_output_is_planned(saved):
    model, path, inputs = saved("multi")
    with kg.load_model(path, activation_dtype="float16") as loaded:
        answers = [as_list(loaded.predict(inputs[0], verbose=0)) for _ in range(4)]
        for later in answers[1:]:
            for a, b in zip(later, answers[0]):
                np.testing.assert_array_equal(a, b)
        assert [i.status for i in loaded.plan_info()] == ["planned"], loaded.plan_info()


def test_nothing_is_left_behind(tmp_path):
    """Predict on numpy arrays and on Tensors (in a tidy scope), eager and planned: the Tensor
    answer a float32 buffer of the numpy answer's halves; once the model is disposed, kerasgl's
    tensors, textures, buffers and plan buffers are as before it was loaded."""
    model = mlp()
    randomize_weights(model, seed=3)
    x = random_inputs(model, batch=4)[0]
    path = str(tmp_path / "mlp16.keras")
    model.save(path)
    before = kg.memory()
    loaded = kg.load_model(path, activation_dtype="float16")
    for _ in range(3):
        answer = loaded.predict(x, verbose=0)
        with kg.tidy():
            out = loaded.predict(kg.tensor(x))
            assert out.storage == "buffer" and out.storage_dtype == "float32"
            np.testing.assert_array_equal(out.numpy(), answer)
    assert loaded.plan_info()[0].status == "planned"
    assert_half_answers(answer, answers_with_half_activations(model, [x]),
                        keras_float32(model, [x]), "mlp")
    loaded.dispose()
    after = kg.memory()
    assert (after.num_tensors, after.num_bytes, after.planned_bytes, after.num_textures,
            after.num_buffers) == (before.num_tensors, before.num_bytes, before.planned_bytes,
                                   before.num_textures, before.num_buffers)


# -------------------------------------------------------------------------------------------------
# 5. The option
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["bfloat16", "float64", "half", "int8", 16, None])
def test_a_bad_activation_dtype_is_refused(value, saved):
    model, path, _ = saved("mlp")
    expected = rf"activation_dtype={value!r}.*'float32' or 'float16'"
    before = kg.memory().num_tensors
    with pytest.raises(kg.InputValueError, match=expected):
        kg.load_model(path, activation_dtype=value)
    assert kg.memory().num_tensors == before
    with kg.load_model(path) as loaded:
        with pytest.raises(kg.InputValueError, match=expected):
            loaded.activation_dtype = value
        assert loaded.activation_dtype == "float32"
    with kg.load_model(path, activation_dtype=np.float16) as loaded:     # numpy's spelling
        assert loaded.activation_dtype == "float16"


def test_the_setter_switches_and_frees_the_plans(saved):
    model, path, inputs = saved("mlp")
    x = inputs[0]
    emulated, float32 = answers_with_half_activations(model, inputs), keras_float32(model, inputs)
    with kg.load_model(path) as loaded:
        assert loaded.activation_dtype == "float32"
        for _ in range(3):
            assert_close(loaded.predict(x, verbose=0), float32[0])
        assert [i.status for i in loaded.plan_info()] == ["planned"]
        loaded.activation_dtype = "float16"
        assert loaded.activation_dtype == "float16" and loaded.plan_info() == []
        assert kg.memory().planned_bytes == 0
        for _ in range(3):
            assert_half_answers(loaded.predict(x, verbose=0), emulated, float32, "set float16")
        assert [i.status for i in loaded.plan_info()] == ["planned"]
        loaded.activation_dtype = np.float16              # the same: the plans stay
        assert [i.status for i in loaded.plan_info()] == ["planned"]
        loaded.activation_dtype = "float32"
        assert loaded.plan_info() == []
        assert_close(loaded.predict(x, verbose=0), float32[0])


def test_load_model_from_json_takes_activation_dtype(tmp_path, saved):
    model, _, inputs = saved("mlp")
    weights = str(tmp_path / "mlp16.weights.h5")
    model.save_weights(weights)
    emulated, float32 = answers_with_half_activations(model, inputs), keras_float32(model, inputs)
    with kg.load_model_from_json(model.to_json(), weights, activation_dtype="float16") as loaded:
        assert loaded.activation_dtype == "float16"
        assert_half_answers(loaded.predict(inputs[0], verbose=0), emulated, float32, "json")
    with kg.load_model_from_json(model.to_json(), weights) as loaded:
        assert loaded.activation_dtype == "float32"
    with pytest.raises(kg.InputValueError, match="activation_dtype='f16'"):
        kg.load_model_from_json(model.to_json(), weights, activation_dtype="f16")


def test_worker_loads_with_activation_dtype(saved):
    model, path, inputs = saved("mlp")
    emulated, float32 = answers_with_half_activations(model, inputs), keras_float32(model, inputs)
    kg.shutdown()                          # a worker must own the context
    try:
        with kg.Worker() as worker:
            with pytest.raises(kg.InputValueError, match="activation_dtype='bf16'"):
                kg.load_model(path, worker=worker, activation_dtype="bf16")
            for loaded in (kg.load_model(path, worker=worker, activation_dtype="float16"),
                           worker.load_model(path, activation_dtype="float16"),
                           worker.load_model(path, storage_dtype="float16",
                                             activation_dtype="float16")):
                answer = loaded.predict(inputs[0])
                if loaded.storage_dtype == "float32":
                    assert_half_answers(answer, emulated, float32, "worker")
                else:
                    with rounded_to_half(model):
                        reference = answers_with_half_activations(model, inputs)
                    assert_half_answers(answer, reference, float32, "worker, float16 weights")
                loaded.dispose()
    finally:
        assert not context.has_context() or context._owner_thread == threading.get_ident()
