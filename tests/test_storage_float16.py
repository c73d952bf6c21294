"""kg.load_model(path, storage_dtype="float16"): Dense / EinsumDense kernels, convolution kernels
and Embedding tables stored on the GPU as IEEE halves, two per 32-bit word, and unpacked to
float32 by the kernels that read them (shaders/half_weights.glsl, ops/half_weights.py).

The reference of each float16 result is Keras itself, run with the same weights rounded to
float16 (those kerasgl stores as halves: biases, normalisation parameters and depthwise kernels
stay float32): the arithmetic is float32 on both sides, so they agree to the suite's 1e-4. Against
Keras with its float32 weights, each rounded weight moves by at most 2^-11 of itself (the half's
unit roundoff; 2^-25 absolute below its normal range), so an output one layer deep moves by at most
2^-11 * sum |x * w| (half_bound): checked on every such output here. docs/float16.md measures
whole application models.

Every variant that reads these weights runs: matmul.comp (vec4 and scalar B, through a view or a
storage buffer, the softmax epilogue), matmul_tiled.comp, a large matmul on the convolution kernel,
conv2d.comp (weights through an rg32ui view or a storage buffer; groups, strides, transposed,
separable, 3-channel input) and conv_gemm.comp, split weights, embedding_rows.comp; plans record
and replay them; a float16 tensor reaching any other kernel is refused.
"""
import contextlib
import os
import threading

import numpy as np
import pytest

import kerasgl as kg
from kerasgl import settings
from kerasgl.ops.matmul import matmul
from kerasgl.runtime import context
from keras_ref import (as_list, assert_close, keras, random_inputs, randomize_weights,
                       rounded_to_half)

L = keras.layers
U = 2.0 ** -11                       # unit roundoff of IEEE half (round to nearest)
WEIGHT_KERNELS = ("matmul.comp", "matmul_tiled.comp", "conv2d.comp", "conv_gemm.comp",
                  "embedding_rows.comp")


def half_bound(model, feed, outputs):
    """2^-11 * sum |x * w| for the given outputs of a model whose outputs there are one layer
    deep, linear or ReLU: Keras on |x| with |w| and no bias. How far rounding the weights to
    float16 may move each of those outputs (weights in the halves' subnormal range move by 2^-25
    at most: within the float32 slack run_half adds)."""
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    for layer in clone._flatten_layers(include_self=False):
        for var in layer.weights:
            value = np.abs(var.numpy())
            var.assign(np.zeros_like(value) if var.path.endswith("bias") else value)
    absolute = [np.abs(x) if np.issubdtype(np.asarray(x).dtype, np.floating) else x
                for x in as_list(feed)]
    sums = as_list(clone.predict(absolute if len(absolute) > 1 else absolute[0], verbose=0))
    return {i: U * sums[i] for i in outputs}


def run_half(model, tmp_path, tuning=None, inputs=None, bounded=(), seed=0, batch=2):
    """kerasgl with storage_dtype="float16" against Keras with the rounded weights (1e-4), and
    the outputs in `bounded` against Keras's float32 result within half_bound. Returns (kerasgl's
    outputs, Keras's float32 outputs, the profiled first predict's events)."""
    randomize_weights(model, seed)
    inputs = random_inputs(model, batch=batch) if inputs is None else inputs
    feed = inputs if len(inputs) > 1 else inputs[0]
    expected32 = as_list(model.predict(feed, verbose=0))
    with rounded_to_half(model):
        expected16 = as_list(model.predict(feed, verbose=0))
    bounds = half_bound(model, feed, bounded) if bounded else {}
    path = str(tmp_path / f"{model.name}.keras")
    model.save(path)
    with settings.override(tuning=tuning) if tuning else contextlib.nullcontext():
        with kg.load_model(path, storage_dtype="float16") as loaded:
            assert loaded.storage_dtype == "float16"
            with kg.profile(gpu_timing=False) as profile:
                actual = as_list(loaded.predict(feed, verbose=0))
    for i, (a, e) in enumerate(zip(actual, expected16)):
        assert_close(a, e, what=f"{model.name} output {i} against Keras with float16 weights")
    for i, bound in bounds.items():
        moved = np.abs(actual[i] - expected32[i])
        slack = 1e-4 + 1e-4 * np.abs(expected32[i])          # float32's own rounding
        assert np.all(moved <= bound + slack), (
            f"output {i} moved {moved.max():.3g} from Keras float32, bound {bound.max():.3g}")
    kernels = [e.kernel for e in profile.events]
    reading = [k for k in kernels if k.split()[0] in WEIGHT_KERNELS]
    assert reading and all("WEIGHTS_F16" in k.split() for k in reading), reading
    return actual, expected32, kernels


def used(kernels, name, *defines):
    return any(k.split()[0] == name and all(d in k.split() for d in defines) for k in kernels)


# -- the conversion itself -------------------------------------------------------------------------
@pytest.mark.parametrize("decode", ["half_decode_integer=0", "half_decode_integer=1"])
def test_every_half_reads_as_its_float32(decode):
    """All 65536 halves (zeros, subnormals, normals, infinities, NaN) through the scalar reads of
    embedding_rows.comp, and the finite ones through vec4 reads (a matmul by the identity on
    matmul.comp, through a view and a storage buffer): each the float32 numpy gives for it, with
    the GPU's unpackHalf2x16 and with the integer decode llvmpipe's policy picks."""
    from kerasgl.ops.embedding_rows import gather_rows
    from kerasgl.tensors.tensor import half_tensor
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    expected = halves.astype(np.float32)
    with settings.override(tuning=decode), kg.tidy():
        table = half_tensor(expected.reshape(-1, 64))
        assert table.dtype == "float16" and table.nbytes == 1 << 17
        assert np.array_equal(table.numpy().view(np.uint16).reshape(-1), halves.view(np.uint16))
        rows = gather_rows(table, kg.tensor(np.arange(1024, dtype=np.int32))).numpy().reshape(-1)
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(rows), nan)
    assert np.array_equal(rows[~nan].view(np.uint32), expected[~nan].view(np.uint32))
    finite = expected[np.isfinite(expected)]
    b = finite[:finite.size // 64 * 64].reshape(-1, 64)            # [K, 64]
    for tuning in ("matmul_tiled=0,matmul_as_conv=0,matmul_views=0",
                   "matmul_tiled=0,matmul_as_conv=0,matmul_views=1"):
        with settings.override(tuning=f"{tuning},{decode}"), kg.tidy():
            got = matmul(kg.tensor(np.eye(b.shape[0], dtype=np.float32)), half_tensor(b)).numpy()
        np.testing.assert_array_equal(got, b)


# -- Dense on every matmul variant -----------------------------------------------------------------
DENSE_TUNINGS = {
    "matmul": "matmul_tiled=0,matmul_as_conv=0,matmul_views=0",
    "matmul_views": "matmul_tiled=0,matmul_as_conv=0,matmul_views=1",
    "tiled": "matmul_tiled=1,matmul_as_conv=0,matmul_views=0",
    "tiled_views": "matmul_tiled=1,matmul_as_conv=0,matmul_views=1,gemm_tile_m=32,"
                   "gemm_tile_n=128,gemm_block_n=8,gemm_tile_k=8",
    "as_conv": "matmul_tiled=0,matmul_as_conv=1,conv_gemm=0,matmul_views=0,conv_weights_image=0",
    "as_conv_views": "matmul_tiled=0,matmul_as_conv=1,conv_gemm=0,matmul_views=1,"
                     "conv_weights_image=1",
    "as_conv_gemm": "matmul_tiled=0,matmul_as_conv=1,conv_gemm=1,conv_weights_image=0",
}


def dense_model():
    """Rows of 256 -> 256 (a large GEMM at predict's 32 rows: tiled, or on the convolution
    kernel), 256 -> 37 (N not a multiple of 4: scalar B), 37 -> 10 with softmax (K odd, the
    softmax epilogue), and a rank-3 input's Dense (odd K, odd kernel size: a half-filled last
    word)."""
    x = keras.Input((256,))
    d1 = L.Dense(256, activation="relu", name="d1")(x)
    d2 = L.Dense(37, name="d2")(d1)
    d3 = L.Dense(10, activation="softmax", name="d3")(d2)
    seq = keras.Input((5, 21))
    r = L.Dense(12, name="r")(seq)
    return keras.Model([x, seq], [d1, d2, d3, r], name="dense_f16")


@pytest.mark.parametrize("variant", list(DENSE_TUNINGS))
def test_dense_on_every_matmul_variant(variant, tmp_path):
    model = dense_model()
    _, _, kernels = run_half(model, tmp_path, DENSE_TUNINGS[variant], bounded=(0, 3), batch=64)
    expected = {"matmul": ("matmul.comp",), "matmul_views": ("matmul.comp", "B_VIEW"),
                "tiled": ("matmul_tiled.comp",), "tiled_views": ("matmul_tiled.comp", "B_VIEW"),
                "as_conv": ("conv2d.comp",), "as_conv_views": ("conv2d.comp", "W_VIEW"),
                "as_conv_gemm": ("conv_gemm.comp",)}[variant]
    assert used(kernels, *expected), kernels
    assert used(kernels, "matmul.comp", "SOFTMAX")


def test_einsum_dense(tmp_path):
    x = keras.Input((6, 10))
    a = L.EinsumDense("abc,cde->abde", output_shape=(6, 3, 4), bias_axes="de", name="a")(x)
    b = L.EinsumDense("...b,bc->...c", output_shape=(9,), bias_axes="c", activation="relu",
                      name="b")(x)
    c = L.EinsumDense("abc,bcd->abd", output_shape=(6, 5), name="c")(x)    # a batch letter
    model = keras.Model(x, [a, b, c], name="einsum_f16")
    run_half(model, tmp_path, bounded=(0, 1, 2), batch=6)


# -- convolutions on both kernels ------------------------------------------------------------------
CONV_TUNINGS = {
    "conv2d": "conv_gemm=0,matmul_tiled=0,conv_weights_image=0,conv_input_image=0",
    "conv2d_views": "conv_gemm=0,matmul_tiled=0,conv_weights_image=1,conv_input_image=1",
    "conv_gemm": "matmul_tiled=1,matmul_as_conv=0,conv_gemm=1,conv_weights_image=0",
    "conv_gemm_views": "matmul_tiled=1,matmul_as_conv=0,conv_gemm=1,conv_weights_image=1,"
                       "conv_input_image=1,gemm_tile_m=32,gemm_tile_n=128,gemm_block_n=8,"
                       "gemm_tile_k=32",
}


def conv_model():
    x = keras.Input((9, 11, 8))
    rgb = keras.Input((10, 10, 3))
    seq = keras.Input((20, 6))
    outs = [L.Conv2D(12, 1, name="k1")(x),
            L.Conv2D(20, 3, padding="same", activation="relu", name="k3")(x),
            L.Conv2D(16, 3, strides=2, name="k3_s2")(x),
            L.Conv2D(36, (5, 3), strides=(2, 1), padding="same", name="k5x3")(x),
            L.Conv2D(12, 3, groups=4, name="grouped")(x),
            L.Conv2DTranspose(8, 3, strides=2, name="transposed")(x),
            L.SeparableConv2D(12, 3, name="separable")(x),
            L.Conv2D(8, 3, name="rgb")(rgb),
            L.Conv1D(10, 3, padding="causal", name="c1d")(seq)]
    return keras.Model([x, rgb, seq], outs, name="conv_f16")


@pytest.mark.parametrize("variant", list(CONV_TUNINGS))
def test_convolutions_on_both_kernels(variant, tmp_path):
    """1x1, 3x3, strided, 5x3, grouped, transposed, separable (its pointwise kernel), a 3-channel
    input and a Conv1D: every output one layer deep, each within half_bound of Keras float32."""
    model = conv_model()
    _, _, kernels = run_half(model, tmp_path, CONV_TUNINGS[variant], bounded=range(9))
    assert used(kernels, "conv2d.comp")                # groups, transposed: conv2d.comp always
    if variant.startswith("conv_gemm"):
        assert used(kernels, "conv_gemm.comp")
    else:
        assert not used(kernels, "conv_gemm.comp")
    if variant.endswith("views"):
        assert used(kernels, "conv2d.comp", "W_VIEW")
    # The depthwise stage of the separable convolution reads float32 weights.
    assert any(k.startswith("depthwise_conv2d") and "WEIGHTS_F16" not in k for k in kernels)


def test_weights_split_over_storage_blocks(tmp_path):
    """Halves in several pieces (each piece its own buffer and dispatch): a convolution on both
    kernels and a Dense's column pieces."""
    x = keras.Input((5, 6, 16))
    a = L.Conv2D(40, 3, padding="same", activation="relu", name="split")(x)
    d = L.Dense(8, name="wide")(L.Flatten()(a))
    model = keras.Model(x, [a, d], name="split_f16")
    for tuning in (CONV_TUNINGS["conv2d"], CONV_TUNINGS["conv_gemm"]):
        with settings.override(max_storage_block=8192):
            run_half(model, tmp_path, tuning, bounded=(0,))
            with kg.load_model(str(tmp_path / "split_f16.keras"), storage_dtype="float16") as m:
                assert len(m.get_layer("split").kernel.pieces) > 1
                assert len(m.get_layer("wide").kernel.pieces) > 1


# -- embeddings ------------------------------------------------------------------------------------
def test_embedding_tables(tmp_path):
    ids = keras.Input((7,), dtype="int32")
    emb = L.Embedding(50, 9, name="emb")(ids)
    rev = L.ReversibleEmbedding(40, 8, tie_weights=False, name="rev")
    hidden = L.Dense(8, activation="tanh", name="hidden")(rev(ids))
    tied = L.ReversibleEmbedding(30, 4, name="tied")
    logits = [rev(hidden, reverse=True), tied(L.Dense(4, name="h2")(tied(ids)), reverse=True)]
    model = keras.Model(ids, [emb] + logits, name="embedding_f16")
    data = np.random.default_rng(2).integers(0, 30, (3, 7)).astype("int32")
    _, _, kernels = run_half(model, tmp_path, inputs=[data], bounded=(0,))
    assert used(kernels, "embedding_rows.comp", "WEIGHTS_F16")


def test_wrapped_and_nested_layers(tmp_path):
    """The option reaches a TimeDistributed's Dense and a nested model's layers."""
    inner = keras.Sequential([keras.Input((6,)), L.Dense(5, activation="relu", name="inner_d")],
                             name="inner")
    x = keras.Input((3, 6))
    flat = keras.Input((6,))
    y = L.TimeDistributed(L.Dense(4, name="td_d"), name="td")(x)
    z = inner(flat)
    model = keras.Model([x, flat], [y, z], name="wrapped_f16")
    run_half(model, tmp_path, bounded=(0, 1))
    with kg.load_model(str(tmp_path / "wrapped_f16.keras"), storage_dtype="float16") as loaded:
        halves = [t for t in loaded._gpu_tensors() if t.dtype == "float16"]
        assert sorted(t.shape for t in halves) == [(6, 4), (6, 5)]


# -- a small CNN, memory, plans --------------------------------------------------------------------
def small_cnn():
    x = keras.Input((16, 16, 3))
    y = L.Conv2D(16, 3, activation="relu", name="c1")(x)
    y = L.MaxPooling2D(2)(y)
    y = L.Conv2D(32, 3, padding="same", activation="relu", name="c2")(y)
    y = L.DepthwiseConv2D(3, activation="relu", name="dw")(y)
    y = L.Conv2D(64, 1, activation="relu", name="c3")(y)
    y = L.GlobalAveragePooling2D()(y)
    y = L.Dense(32, activation="relu", name="fc")(y)
    return keras.Model(x, L.Dense(10, name="logits")(y), name="cnn_f16")


# What the small CNN's float16 logits differ from Keras's float32 ones by, at most, relative to
# the logits' largest magnitude (measured 3.8e-4 to 4.5e-4 over three seeds of uniform(-1, 1)
# weights; docs/float16.md).
CNN_RELATIVE_BOUND = 2e-3


def test_small_cnn(tmp_path):
    model = small_cnn()
    actual, expected32, _ = run_half(model, tmp_path, batch=4)
    moved = np.abs(actual[0] - expected32[0]).max() / np.abs(expected32[0]).max()
    assert 0 < moved < CNN_RELATIVE_BOUND


def test_memory_is_halved_and_reported(tmp_path):
    """model.gpu_bytes, kg.memory() and its per-model line: the halved weights' true bytes; each
    half tensor reads back as the float16 of its weights, in order (packHalf2x16's layout)."""
    model = small_cnn()
    randomize_weights(model)
    path = str(tmp_path / "cnn_f16.keras")
    model.save(path)
    before = kg.memory().num_bytes
    with kg.load_model(path) as full:
        full_bytes = full.gpu_bytes
        assert kg.memory().num_bytes - before == full_bytes
    with kg.load_model(path, storage_dtype="float16") as half:
        half_bytes = half.gpu_bytes
        assert kg.memory().num_bytes - before == half_bytes
        assert [m.bytes for m in kg.memory().models if m.source == path] == [half_bytes]
        kernel = half.get_layer("fc").kernel
        assert kernel.dtype == "float16" and kernel.nbytes == 2 * kernel.size
        np.testing.assert_array_equal(kernel.numpy(),
                                      model.get_layer("fc").kernel.numpy().astype(np.float16))
        assert half.get_layer("fc").bias.dtype == "float32"
        assert half.get_layer("dw").kernel.weights.dtype == "float32"
    # Weights other than the halved ones (biases, the depthwise kernel) are a small part here.
    assert 0.5 < half_bytes / full_bytes < 0.56, (half_bytes, full_bytes)


def test_plans_record_and_replay_the_half_variants(tmp_path):
    """Predict until a plan replays, at two batch sizes: every call the eager call's numbers."""
    model = dense_model()
    randomize_weights(model)
    path = str(tmp_path / "dense_f16.keras")
    model.save(path)
    with kg.load_model(path, storage_dtype="float16") as loaded:
        for batch in (3, 5):
            feed = random_inputs(model, batch=batch, seed=batch)
            first = loaded.predict(feed, verbose=0)
            for _ in range(4):
                for a, b in zip(loaded.predict(feed, verbose=0), first):
                    np.testing.assert_array_equal(a, b)
            info = [i for i in loaded.plan_info() if i.input_shapes[0][0] == batch]
            assert info and info[0].status == "planned", loaded.plan_info()


def test_two_models_with_different_storage_dtypes(tmp_path):
    model = small_cnn()
    randomize_weights(model)
    x = random_inputs(model, batch=2)[0]
    expected32 = model.predict(x, verbose=0)
    with rounded_to_half(model):
        expected16 = model.predict(x, verbose=0)
    path = str(tmp_path / "cnn_f16.keras")
    model.save(path)
    with kg.load_model(path, storage_dtype="float16") as half, kg.load_model(path) as full:
        assert (half.storage_dtype, full.storage_dtype) == ("float16", "float32")
        for _ in range(3):                # interleaved, through their plans
            assert_close(full.predict(x, verbose=0), expected32)
            assert_close(half.predict(x, verbose=0), expected16)


def test_load_model_from_json_takes_storage_dtype(tmp_path):
    model = keras.Sequential([keras.Input((5,)), L.Dense(6, name="d")], name="json_f16")
    randomize_weights(model)
    weights = str(tmp_path / "json_f16.weights.h5")
    model.save_weights(weights)
    x = random_inputs(model)[0]
    with rounded_to_half(model):
        expected16 = model.predict(x, verbose=0)
    with kg.load_model_from_json(model.to_json(), weights, storage_dtype="float16") as loaded:
        assert loaded.storage_dtype == "float16"
        assert loaded.get_layer("d").kernel.dtype == "float16"
        assert_close(loaded.predict(x, verbose=0), expected16)
    with pytest.raises(kg.InputValueError, match="storage_dtype='f8'"):
        kg.load_model_from_json(model.to_json(), weights, storage_dtype="f8")


# -- refusals --------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["bfloat16", "float64", "int8", "half", 16, None])
def test_bad_storage_dtype_is_refused_at_load(value, tmp_path):
    path = str(tmp_path / "m.keras")
    keras.Sequential([keras.Input((3,)), L.Dense(2)]).save(path)
    expected = rf"storage_dtype={value!r}.*'float32' or 'float16'"
    with pytest.raises(kg.InputValueError, match=expected):
        kg.load_model(path, storage_dtype=value)
    with kg.load_model(path, storage_dtype=np.float16) as model:     # numpy's spelling is taken
        assert model.storage_dtype == "float16"


def test_weights_beyond_half_range_are_refused(tmp_path):
    model = keras.Sequential([keras.Input((3,)), L.Dense(2, name="big")])
    model.get_layer("big").set_weights([np.full((3, 2), 7e4, np.float32), np.zeros(2, np.float32)])
    path = str(tmp_path / "big.keras")
    model.save(path)
    before = kg.memory().num_tensors
    with pytest.raises(kg.InputValueError, match=r"Layer 'big'.*65504.*storage_dtype='float32'"):
        kg.load_model(path, storage_dtype="float16")
    assert kg.memory().num_tensors == before
    with kg.load_model(path) as full:
        assert_close(full.predict(np.ones((1, 3), np.float32), verbose=0),
                     np.full((1, 2), 2.1e5, np.float32))


def test_other_ops_refuse_float16_tensors(tmp_path):
    """A float16 weight tensor taken out of a layer is read by no kernel but those that unpack
    halves: anything else is a ShapeError naming it, never float32 read from its words."""
    path = str(tmp_path / "m.keras")
    keras.Sequential([keras.Input((4,)), L.Dense(6, name="d")]).save(path)
    with kg.load_model(path, storage_dtype="float16") as model:
        kernel = model.get_layer("d").kernel
        with kg.tidy():
            for op in (lambda: kernel + 1.0, lambda: kg.reduce_sum(kernel),
                       lambda: kg.transpose(kernel), lambda: kernel.to_texture(),
                       lambda: matmul(kernel, kg.ones((6, 2)))):
                with pytest.raises(kg.ShapeError, match="float16"):
                    op()
        with pytest.raises(kg.ShapeError, match="float16"):
            kg.tensor(np.zeros(3), dtype="float16")       # no user call makes one


# -- the measuring script ---------------------------------------------------------------------------
def test_fidelity_script_measures_the_digits_cnn():
    """scripts/float16_fidelity.py (docs/float16.md's table) on the trained digits CNN: the
    machine's facts, then a row whose weights take about half the memory and whose logits moved
    (not zero: halves were read), by little."""
    import re
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, os.path.join(repo, "scripts", "float16_fidelity.py"),
                           "digits"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KERAS_BACKEND": "jax"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert re.search(r"^# .+, \d+ CPUs, load average [0-9. ]+; .+; kerasgl ", proc.stdout, re.M)
    row = re.search(r"^\| digits \| 21,546 \| .+ kB \| .+ kB \| ([0-9.]+) \| [0-9.e+-]+ \| "
                    r"([0-9.e+-]+) \| ([0-9.e+-]+) \| ([0-9.e+-]+) \| 24/24 \|$", proc.stdout, re.M)
    assert row, proc.stdout
    ratio, f32_diff, f16_diff, f16_rel = map(float, row.groups())
    assert 0.5 <= ratio < 0.51 and f32_diff < 1e-4 and f32_diff < f16_diff and f16_rel < 1e-3


# -- the worker ------------------------------------------------------------------------------------
def test_worker_loads_with_storage_dtype(tmp_path):
    model = small_cnn()
    randomize_weights(model)
    x = random_inputs(model, batch=2)[0]
    with rounded_to_half(model):
        expected16 = model.predict(x, verbose=0)
    path = str(tmp_path / "cnn_f16.keras")
    model.save(path)
    kg.shutdown()                          # a worker must own the context
    try:
        with kg.Worker() as worker:
            with pytest.raises(kg.InputValueError, match="storage_dtype='bf16'"):
                kg.load_model(path, worker=worker, storage_dtype="bf16")
            for loaded in (kg.load_model(path, worker=worker, storage_dtype="float16"),
                           worker.load_model(path, storage_dtype="float16")):
                assert loaded.storage_dtype == "float16"
                assert_close(loaded.predict(x), expected16)
                loaded.dispose()
    finally:
        assert not context.has_context() or context._owner_thread == threading.get_ident()
