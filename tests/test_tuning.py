"""Per-device kernel tuning (kerasgl/runtime/tuning.py): every variant it may choose computes the same
values, and its cache file never gets in the way. References: numpy for ops, Keras for layers."""
import json
import os

import numpy as np
import pytest

import kerasgl as kg
from kerasgl import devices, settings
from kerasgl.runtime import context, tuning
from kerasgl.ops import conv, matmul as mm

VARIANTS = ["conv_weights_image=0,conv_input_image=0,matmul_views=0,matmul_as_conv=0,window_views=0,depthwise_views=0,elementwise_views=0",
            "conv_weights_image=1,conv_input_image=0,matmul_views=1,matmul_as_conv=1",
            "conv_weights_image=1,conv_input_image=1,matmul_views=1,matmul_as_conv=1",
            "conv_weights_image=0,conv_input_image=0,matmul_views=0,matmul_as_conv=1",
            "conv_weights_image=0,conv_input_image=1,matmul_views=1,matmul_as_conv=0",
            "conv_local_size=16,conv_pix=8", "conv_local_size=64", "conv_local_size=8"]
# The tiled GEMM and the implicit-GEMM convolution (GPUs' defaults), in several tile shapes.
GEMM_VARIANTS = ["matmul_tiled=1,matmul_as_conv=0,conv_gemm=1,matmul_views=0,conv_weights_image=0,"
                 "conv_input_image=0",
                 "matmul_tiled=1,matmul_as_conv=0,conv_gemm=1,matmul_views=1,conv_weights_image=1,"
                 "conv_input_image=1,gemm_tile_m=128,gemm_block_m=8,gemm_tile_k=8",
                 "matmul_tiled=1,matmul_as_conv=1,conv_gemm=1,gemm_tile_m=32,gemm_tile_n=32,"
                 "gemm_block_n=8,gemm_tile_k=32"]
# The variants that only change where values are read from, or how the work is spread: the
# same sums in the same order (no tiled GEMM, which sums in its own order).
SAME_SUMS = [f"{v},conv_gemm=0,matmul_tiled=0" for v in VARIANTS]
VARIANTS = VARIANTS + GEMM_VARIANTS


def close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


@pytest.fixture
def variant(request, monkeypatch):
    monkeypatch.setenv(tuning.ENV, request.param)
    return request.param


@pytest.mark.parametrize("variant", VARIANTS, indirect=True)
@pytest.mark.parametrize("transpose_b", [False, True])
def test_large_matmul_matches_numpy_in_every_variant(variant, transpose_b):
    # Large enough (M*K*N >= AS_CONV_MIN_WORK) to take the convolution path where it is on.
    rng = np.random.default_rng(0)
    a = rng.standard_normal((160, 132), dtype=np.float32)
    b = rng.standard_normal((132, 200), dtype=np.float32)
    assert 160 * 132 * 200 >= mm.AS_CONV_MIN_WORK
    with kg.tidy():
        gb = kg.tensor(b.T.copy() if transpose_b else b)
        out = mm.matmul(kg.tensor(a), gb, transpose_b=transpose_b).numpy()
    close(out, a @ b)


@pytest.mark.parametrize("variant", VARIANTS, indirect=True)
def test_large_matmul_with_bias_and_activation(variant):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 96), dtype=np.float32)
    b = rng.standard_normal((96, 128), dtype=np.float32)
    bias = rng.standard_normal(128, dtype=np.float32)
    with kg.tidy():
        out = mm.matmul(kg.tensor(a), kg.tensor(b), kg.tensor(bias), "relu").numpy()
    close(out, np.maximum(a @ b + bias, 0))


@pytest.mark.parametrize("variant", VARIANTS, indirect=True)
@pytest.mark.parametrize("n", [200, 196])
def test_large_matmul_whose_last_column_block_is_partial(variant, n):
    """On the convolution path B is read in place in blocks of 32 columns: a partial last block
    reads past row ends (into the next row, or past the buffer: zeros) and must not leak into C."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((256, 128), dtype=np.float32)
    b = rng.standard_normal((128, n), dtype=np.float32)
    with kg.tidy():
        out = mm.matmul(kg.tensor(a), kg.tensor(b)).numpy()
    close(out, a @ b)


def reference_conv(x, kernel, pad):
    n, h, w, cin = x.shape
    k = kernel.shape[0]
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    out = 0
    for i in range(k):
        for j in range(k):
            out = out + xp[:, i:i + h + 2 * pad - k + 1, j:j + w + 2 * pad - k + 1, :] @ kernel[i, j]
    return out


@pytest.mark.parametrize("variant", VARIANTS, indirect=True)
@pytest.mark.parametrize("shape,k,cout", [((1, 9, 11, 8), 3, 64), ((2, 5, 6, 12), 1, 40),
                                          ((1, 7, 7, 3), 3, 16)])
def test_conv2d_matches_numpy_in_every_variant(variant, shape, k, cout):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape, dtype=np.float32)
    kernel = rng.standard_normal((k, k, shape[-1], cout), dtype=np.float32) * 0.2
    pad = (k - 1) // 2
    with kg.tidy():
        packed = conv.pack_conv(kernel, None, 1, kg.tensor)
        out = conv.conv2d(kg.tensor(x), packed, padding=((pad, pad), (pad, pad))).numpy()
    close(out, reference_conv(x, kernel, pad))


def test_view_and_buffer_variants_are_bit_identical(monkeypatch):
    """Tuning only changes where values are read from: the sums are the same, bit for bit."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 12, 12, 16), dtype=np.float32)
    kernel = rng.standard_normal((3, 3, 16, 64), dtype=np.float32)
    results = []
    for setting in SAME_SUMS:
        monkeypatch.setenv(tuning.ENV, setting)
        with kg.tidy():
            packed = conv.pack_conv(kernel, None, 1, kg.tensor)
            results.append(conv.conv2d(kg.tensor(x), packed, padding=((1, 1), (1, 1))).numpy())
    for other in results[1:]:
        assert np.array_equal(results[0], other)


def test_keras_conv_model_in_both_weight_layouts(monkeypatch, tmp_path):
    import keras
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((10, 10, 4)),
                              keras.layers.Conv2D(48, 3, padding="same", activation="relu"),
                              keras.layers.ZeroPadding2D(((1, 0), (2, 1))),
                              keras.layers.MaxPooling2D(2, strides=1),
                              keras.layers.SeparableConv2D(40, 3),
                              keras.layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same"),
                              keras.layers.DepthwiseConv2D(5, strides=2),
                              keras.layers.Conv2DTranspose(36, 3, strides=2)])
    path = str(tmp_path / "m.keras")
    model.save(path)
    x = np.random.default_rng(5).standard_normal((1, 10, 10, 4)).astype(np.float32)
    expected = model.predict(x, verbose=0)
    for setting in ("conv_weights_image=0,conv_input_image=0,window_views=0,depthwise_views=0,"
                    "elementwise_views=0,conv_gemm=0",
                    "conv_weights_image=1,conv_input_image=1,window_views=1,depthwise_views=1,"
                    "elementwise_views=1,conv_gemm=0", GEMM_VARIANTS[0], GEMM_VARIANTS[1]):
        monkeypatch.setenv(tuning.ENV, setting)
        with kg.load_model(path) as loaded:
            for _ in range(4):             # eager, recorded twice, then a replayed plan
                close(loaded.predict(x, verbose=0), expected)
            assert loaded.plan_info()[0].status == "planned"


# -- the settings and their cache ---------------------------------------------------------------
def test_defaults_come_from_the_device_policy():
    """The per-driver tables live behind the device seam: llvmpipe's policy hands down its
    measured variants; the plain policy (every other driver, and any driver under
    KERASGL_DEVICE_POLICY=plain) keeps Tuning's generic GPU defaults."""
    with settings.override(device_policy="auto"):     # whatever this process runs under
        llvmpipe = devices.policy_for("llvmpipe (LLVM 15.0.6, 256 bits)")
    assert tuning.defaults_for(llvmpipe).conv_weights_image
    assert tuning.defaults_for(llvmpipe).conv_local_size == 8
    assert tuning.defaults_for(devices.policy_for("NVIDIA H200/PCIe/SSE2")) == tuning.Tuning()
    with settings.override(device_policy="plain"):
        assert tuning.defaults_for(devices.policy_for("llvmpipe (LLVM 15.0.6)")) == tuning.Tuning()


def test_generic_gpu_defaults_are_gpu_shaped():
    """What the plain policy runs (NVIDIA, AMD, Intel): tiled GEMMs and implicit-GEMM
    convolutions on work groups of whole 64-lane waves, within every GL 4.3 device's limits."""
    from kerasgl.ops import gemm_tiles
    generic = tuning.Tuning()
    assert generic.matmul_tiled and generic.conv_gemm and generic.conv_local_size % 64 == 0
    tiles = gemm_tiles.Tiles(generic.gemm_tile_m, generic.gemm_tile_n, generic.gemm_tile_k,
                             generic.gemm_block_m, generic.gemm_block_n)
    assert 64 <= tiles.invocations <= 256 and tiles.invocations % 64 == 0
    gl43_minimum = context.Limits(0, 0, 0, (1024, 1024, 64), (65535,) * 3, 1024, 32768)
    assert tiles.problems(gl43_minimum) == []


@pytest.mark.parametrize("setting,complaint", [
    ("gemm_block_n=6", "multiple of 4"), ("gemm_tile_m=66", "whole blocks"),
    ("gemm_tile_m=128,gemm_tile_n=128,gemm_tile_k=64", "shared memory"),
])
def test_a_tile_shape_the_device_cannot_run_is_refused(monkeypatch, setting, complaint):
    monkeypatch.setenv(tuning.ENV, f"matmul_tiled=1,matmul_as_conv=0,{setting}")
    limits = context.limits()
    with kg.tidy():
        a = kg.tensor(np.ones((64, 64), np.float32))
        if "shared" in complaint and limits.max_shared_memory_bytes >= 4 * 64 * 256:
            # A device with room for these tiles runs them (llvmpipe's 32 KiB has none).
            np.testing.assert_array_equal(mm.matmul(a, a).numpy(), np.full((64, 64), 64.0))
            return
        with pytest.raises(kg.KerasGLError, match=complaint):
            mm.matmul(a, a)


def test_environment_overrides_and_bad_values_are_ignored(monkeypatch):
    monkeypatch.delenv(tuning.ENV, raising=False)
    device_default = tuning.current().conv_cout_vec
    monkeypatch.setenv(tuning.ENV, "conv_pix=8, conv_weights_image=0 bogus=3 conv_cout_vec=-1")
    chosen = tuning.current()
    assert chosen.conv_pix == 8 and not chosen.conv_weights_image
    assert chosen.conv_cout_vec == device_default


def test_cache_lives_under_xdg_cache_home_and_is_read_back(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(tuning.ENV, raising=False)
    tuning.reset()
    try:
        assert tuning.cache_path() == os.path.join(str(tmp_path), "kerasgl", "tuning.json")
        assert tuning.save({"conv_pix": 8, "not_a_setting": 1})
        with open(tuning.cache_path()) as handle:
            assert json.load(handle) == {tuning.device_key(): {"conv_pix": 8}}
        assert tuning.current().conv_pix == 8
    finally:
        tuning.reset()


def test_unwritable_or_corrupt_cache_is_harmless(monkeypatch, tmp_path):
    """Neither a cache that cannot be written nor one that cannot be read changes the settings:
    both leave the renderer's defaults (no KERASGL_TUNING override here), and neither raises."""
    monkeypatch.delenv(tuning.ENV, raising=False)
    defaults = tuning.defaults_for(context.policy())
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))   # kerasgl/ cannot be made under a file
    tuning.reset()
    try:
        assert tuning.save({"conv_pix": 8}) is False
        assert tuning.current() == defaults
        corrupt = tmp_path / "c"
        (corrupt / "kerasgl").mkdir(parents=True)
        (corrupt / "kerasgl" / "tuning.json").write_text("{not json")
        monkeypatch.setenv("XDG_CACHE_HOME", str(corrupt))
        tuning.reset()
        assert tuning.current() == defaults
        # Saving over the corrupt file replaces it with a readable one that is used.
        assert tuning.save({"conv_pix": 8}) is True
        assert tuning.current().conv_pix == 8 and tuning.current() != defaults
    finally:
        tuning.reset()


def test_measure_and_save_writes_a_choice_for_every_setting(tmp_path, monkeypatch):
    """The short per-device measurement (kerasgl/autotune.py) tries every trial, writes a valid
    value for each setting into this device's cache entry, and leaves no tensor behind. (Which
    variant wins is the machine's business: nothing here asserts a speed.)"""
    from kerasgl import autotune
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(tuning.ENV, raising=False)
    lines = []
    before = kg.memory().num_tensors
    try:
        chosen = autotune.measure_and_save(scale=1, repeats=1, report=lines.append)
        saved = json.loads((tmp_path / "kerasgl" / "tuning.json").read_text())[tuning.device_key()]
        assert saved == chosen
        assert tuning.current() == tuning.Tuning(**chosen)
    finally:
        tuning.reset()
    for trial in autotune.TRIALS:
        assert chosen[trial.field] in trial.values
        assert any(line.startswith(trial.field) for line in lines)
    assert "saved to" in lines[-1]
    assert kg.memory().num_tensors == before
    assert os.environ.get(tuning.ENV) is None            # the override used while timing is gone


@pytest.mark.parametrize("shape,axis,span", [((1, 4, 5, 3), -1, 1), ((1, 6, 5, 3), -1, 1),
                                             ((2, 3, 4, 8), 1, 1), ((3, 7), -1, 1),
                                             ((2, 4, 6), 1, 2)])
def test_channel_maps_are_the_same_on_every_path(monkeypatch, shape, axis, span):
    """ops.normalization's per-channel maps (scale_shift, prelu, standardize both ways): the vec4
    path, with and without views, and the scalar path (an odd size) give numpy's values, and the
    two vec4 paths the same bits."""
    from kerasgl.ops import normalization as nm
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape, dtype=np.float32)
    pshape = shape[axis:][:span] if axis >= 0 else shape[axis:]
    p = rng.uniform(0.5, 2.0, pshape).astype(np.float32)
    q = rng.standard_normal(pshape, dtype=np.float32)
    bshape = pshape + (1,) * (len(shape) - (axis % len(shape)) - span)
    pb, qb = p.reshape(bshape), q.reshape(bshape)
    expected = {"scale_shift": x * pb + qb, "prelu": np.maximum(x, 0) - pb * np.maximum(-x, 0),
                "standardize": (x - qb) / pb, "invert": qb + x * pb}
    results = {}
    for setting in ("elementwise_views=1", "elementwise_views=0"):
        monkeypatch.setenv(tuning.ENV, setting)
        with kg.tidy():
            xt, pt, qt = kg.tensor(x), kg.tensor(p.ravel()), kg.tensor(q.ravel())
            got = {"scale_shift": nm.scale_shift(xt, pt, qt, axis, span),
                   "prelu": nm.prelu(xt, pt, axis, span),
                   "standardize": nm.standardize(xt, qt, pt, axis, span),
                   "invert": nm.standardize(xt, qt, pt, axis, span, invert=True)}
            results[setting] = {k: v.numpy() for k, v in got.items()}
    for name, value in expected.items():
        close(results["elementwise_views=1"][name], value)
        assert np.array_equal(results["elementwise_views=1"][name],
                              results["elementwise_views=0"][name]), name
