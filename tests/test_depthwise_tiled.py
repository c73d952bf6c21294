"""The tiled depthwise kernel (shaders/depthwise_conv2d_tiled.glsl, tuning depthwise_tiled: the GPU
default, off on llvmpipe), forced here under whatever policy runs the suite: DepthwiseConv2D /
SeparableConv2D / DepthwiseConv1D layers against Keras over strides, dilations, paddings, depth
multipliers, odd sizes, channels that are not whole vec4s, fused activations and batches, in
several tile shapes; the same values as the row kernel; the tile sized against the device's
shared memory (fewer channel blocks, then the row kernel); shapes the device cannot run refused;
the work it declares to profiles."""
import numpy as np
import pytest
from keras_ref import assert_close, keras
from spatial_helpers import F, assert_branches_match_keras

import kerasgl as kg
from kerasgl import settings
from kerasgl.errors import SettingError
from kerasgl.ops import conv
from kerasgl.runtime import context

# The GPU default (8 x 8 pixels x 4 vec4s, one output each: 256 invocations), several outputs per
# invocation, and small tiles (many groups, partial tiles at every edge); with the input and the
# weights read from storage buffers (a GPU's choice) and through image views (llvmpipe's).
TILED = ["depthwise_tiled=1,depthwise_views=0",
         "depthwise_tiled=1,depthwise_views=1,depthwise_tile_pix=4,depthwise_tile_c=2",
         "depthwise_tiled=1,depthwise_views=0,depthwise_tile_h=4,depthwise_tile_w=2,"
         "depthwise_tile_c=1,depthwise_tile_pix=2"]


@pytest.fixture
def variant(request):
    with settings.override(tuning=request.param):
        yield request.param


def tiled_kernels(profile) -> list[str]:
    return [e.kernel for e in profile.events
            if e.kernel.startswith("depthwise_conv2d.comp") and "TILED" in e.kernel.split()]


@pytest.mark.parametrize("variant", TILED, indirect=True)
@pytest.mark.parametrize("channels", [5, 8])
def test_depthwise_grid_matches_keras(variant, channels, tmp_path):
    layers = [
        F.DepthwiseConv2D(3, name="k3_valid"),
        F.DepthwiseConv2D(3, padding="same", activation="relu6", name="same_relu6"),
        F.DepthwiseConv2D(3, strides=2, padding="same", name="s2_same"),
        F.DepthwiseConv2D(3, strides=2, padding="valid", activation="relu", name="s2_valid"),
        F.DepthwiseConv2D((2, 4), strides=(1, 2), depth_multiplier=2, name="k2x4_m2"),
        F.DepthwiseConv2D(3, dilation_rate=2, padding="same", depth_multiplier=3, name="d2_m3"),
        F.DepthwiseConv2D((3, 2), dilation_rate=(1, 3), name="d1x3_valid"),
        F.DepthwiseConv2D(5, padding="same", use_bias=False, name="k5_nobias"),
        F.DepthwiseConv2D(3, padding="same", activation="elu", name="elu"),
    ]
    assert_branches_match_keras(tmp_path, (11, 9, channels), layers,
                                f"dw_tiled_c{channels}", batch=3)


@pytest.mark.parametrize("variant", TILED[:2], indirect=True)
def test_larger_images_and_separable(variant, tmp_path):
    """Several tiles each way with partial last ones (37 columns, 30 rows), channel groups
    past the last block (20 channels: 5 vec4s), strides 2 and 3, and the separable layers."""
    layers = [F.DepthwiseConv2D(3, padding="same", activation="relu6", name="dw"),
              F.DepthwiseConv2D(3, strides=2, padding="same", name="dw_s2"),
              F.DepthwiseConv2D(5, strides=3, depth_multiplier=2, name="dw_k5_s3_m2"),
              F.DepthwiseConv2D(3, dilation_rate=2, padding="same", name="dw_d2"),
              F.SeparableConv2D(24, 3, padding="same", activation="relu", name="separable"),
              F.SeparableConv2D(7, 3, strides=2, depth_multiplier=2, name="separable_s2_m2")]
    with kg.profile(gpu_timing=False) as p:
        assert_branches_match_keras(tmp_path, (30, 37, 20), layers, "dw_tiled_large")
    assert tiled_kernels(p)
    layers = [F.DepthwiseConv1D(3, padding="same", name="dw1d"),
              F.DepthwiseConv1D(3, strides=2, depth_multiplier=2, name="dw1d_s2_m2"),
              F.SeparableConv1D(6, 3, dilation_rate=2, activation="tanh", name="sep1d")]
    assert_branches_match_keras(tmp_path, (19, 6), layers, "dw_tiled_1d")


def depthwise_keras(x, kernel, bias, strides, dilation, padding):
    y = keras.ops.depthwise_conv(x, kernel, strides=strides, padding=padding,
                                 dilation_rate=dilation)
    return np.asarray(y) + bias


def run_depthwise(x, kernel, bias, strides, dilation, padding):
    """kerasgl's op, with the padding Keras's rule gives (conv.conv_padding), and the profile."""
    pads = tuple(conv.conv_padding(size, k, s, d, padding)[1:]
                 for size, k, s, d in zip(x.shape[1:3], kernel.shape[:2], strides, dilation))
    with kg.tidy(), kg.profile(gpu_timing=False) as p:
        packed = conv.pack_depthwise(kernel, bias, kg.tensor)
        try:
            y = conv.depthwise_conv2d(kg.tensor(x), packed, strides, dilation, pads).numpy()
        finally:
            packed.dispose()
    return y, p


CASES = {  # name: (x shape, kernel shape, strides, dilation, padding)
    "k3_s1_same": ((2, 17, 19, 12), (3, 3, 12, 1), (1, 1), (1, 1), "same"),
    "k3_s2_valid_m2": ((1, 16, 15, 7), (3, 3, 7, 2), (2, 2), (1, 1), "valid"),
    "k4_s3_d1x2_m3": ((2, 13, 23, 5), (4, 3, 5, 3), (3, 1), (1, 2), "same"),
}


@pytest.mark.parametrize("case", CASES)
def test_the_tiled_kernel_sums_as_the_row_kernel(case):
    """Both kernels add the bias and then the taps in (kh, kw) order: the same values, to the
    driver's rounding; both match Keras."""
    shape, kshape, strides, dilation, padding = CASES[case]
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype("float32")
    kernel = rng.standard_normal(kshape).astype("float32")
    bias = rng.standard_normal(kshape[2] * kshape[3]).astype("float32")
    expected = depthwise_keras(x, kernel, bias, strides, dilation, padding)
    results = {}
    for tiled in (0, 1):
        with settings.override(tuning=f"depthwise_tiled={tiled}"):
            results[tiled], p = run_depthwise(x, kernel, bias, strides, dilation, padding)
        assert bool(tiled_kernels(p)) == bool(tiled)
        assert_close(results[tiled], expected, what=f"depthwise_tiled={tiled}")
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6, atol=1e-6)


GPU_TILE = ("depthwise_tiled=1,depthwise_tile_h=8,depthwise_tile_w=8,depthwise_tile_c=4,"
            "depthwise_tile_pix=1")


def packed_ones(kh, kw, channels):
    return conv.pack_depthwise(np.ones((kh, kw, channels, 1), np.float32), None, kg.tensor)


def test_lanes_past_the_channels_or_rows_move_along_the_row():
    """The group keeps its 256 lanes: fewer channel blocks where the kernel has fewer (3 and 8
    channels), fewer rows where the output has fewer (a DepthwiseConv1D's one row)."""
    expected = {(16, 20): (8, 8, 4), (12, 20): (8, 8, 4), (8, 20): (8, 16, 2),
                (3, 20): (8, 32, 1), (16, 3): (4, 16, 4), (16, 1): (1, 64, 4), (3, 1): (1, 256, 1)}
    with settings.override(tuning=GPU_TILE):
        for (channels, out_h), (h, w, c) in expected.items():
            packed = packed_ones(3 if out_h > 1 else 1, 3, channels)
            try:
                assert conv.depthwise_tiles(packed, (1, 1), (1, 1), out_h) == \
                    conv.DepthwiseTiles(h, w, c, 1), (channels, out_h)
            finally:
                packed.dispose()


def test_the_tile_fits_the_devices_shared_memory():
    """A larger dilation widens the halo: the tile keeps fewer channel blocks (down to whole
    64-lane waves), then the row kernel runs; each matches Keras."""
    room = context.limits().max_shared_memory_bytes
    packed = packed_ones(3, 3, 16)
    try:
        with settings.override(tuning=GPU_TILE):
            fits = {}
            for dilation in range(1, 200):
                tiles = conv.depthwise_tiles(packed, (1, 1), (dilation, dilation), 64)
                fits.setdefault(None if tiles is None else tiles.c, dilation)
                if tiles is None:
                    break
                assert tiles.shared_bytes((1, 1), (dilation,) * 2, 3, 3) <= room
                assert tiles.invocations >= 64 and (tiles.h, tiles.w) == (8, 8)
            assert list(fits) == [4, 2, 1, None], fits
        with settings.override(tuning="depthwise_tiled=0"):
            assert conv.depthwise_tiles(packed, (1, 1), (1, 1), 64) is None
    finally:
        packed.dispose()
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2 * fits[None] + 3, 2 * fits[None] + 3, 16)).astype("float32")
    kernel = rng.standard_normal((3, 3, 16, 1)).astype("float32")
    bias = rng.standard_normal(16).astype("float32")
    with settings.override(tuning=GPU_TILE):
        for dilation, tile_c in ((fits[2], ["TILE_C=2"]), (fits[None], [])):
            y, p = run_depthwise(x, kernel, bias, (1, 1), (dilation, dilation), "same")
            assert [next(t for t in k.split() if t.startswith("TILE_C="))
                    for k in tiled_kernels(p)] == tile_c
            assert_close(y, depthwise_keras(x, kernel, bias, (1, 1), (dilation,) * 2, "same"))


def test_work_groups_folded_past_65535():
    """One-invocation groups of 1 x 1 pixel and one vec4: 84495 groups, run as a 2D grid whose
    last group stores nothing."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 129, 131, 20)).astype("float32")
    kernel = rng.standard_normal((3, 3, 20, 1)).astype("float32")
    bias = rng.standard_normal(20).astype("float32")
    with settings.override(tuning="depthwise_tiled=1,depthwise_tile_h=1,depthwise_tile_w=1,"
                                  "depthwise_tile_c=1,depthwise_tile_pix=1"):
        y, p = run_depthwise(x, kernel, bias, (1, 1), (1, 1), "same")
    event = p.events[-1]
    assert "TILED" in event.kernel.split() and event.groups[1] == 2 and event.local_size[0] == 1
    assert_close(y, depthwise_keras(x, kernel, bias, (1, 1), (1, 1), "same"))


@pytest.mark.parametrize("setting, fragment", [
    ("depthwise_tile_w=6,depthwise_tile_pix=4", "depthwise_tile_w=6 is not a multiple"),
    ("depthwise_tile_h=32,depthwise_tile_w=32,depthwise_tile_c=8", "invocations"),
])
def test_tile_shapes_the_device_cannot_run_are_refused(setting, fragment):
    packed = packed_ones(3, 3, 4)
    try:
        with settings.override(tuning="depthwise_tiled=1," + setting):
            with pytest.raises(SettingError, match=fragment):
                conv.depthwise_tiles(packed, (1, 1), (1, 1), 9)
    finally:
        packed.dispose()


def test_the_tiled_kernel_declares_its_work():
    """As the row kernel does: 2 flops per tap and output; the input, output, weights and bias
    once (profiles read it against the device's peaks)."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 9, 7, 8)).astype("float32")
    kernel = rng.standard_normal((3, 3, 8, 1)).astype("float32")
    with settings.override(tuning="depthwise_tiled=1"):
        _, p = run_depthwise(x, kernel, None, (2, 2), (1, 1), "valid")
    event = p.events[-1]
    assert tiled_kernels(p) == [event.kernel]
    assert event.flops == 2 * (2 * 4 * 3 * 8) * 9
    assert event.bytes == 4 * (2 * 9 * 7 * 8 + 2 * 4 * 3 * 8) + 4 * 10 * 8


def test_planned_replays_of_the_tiled_kernel(tmp_path):
    """A model's predict eager, recorded, then replayed from its plan: the same values."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((15, 13, 12)),
                              keras.layers.DepthwiseConv2D(3, padding="same", activation="relu6"),
                              keras.layers.DepthwiseConv2D(3, strides=2, depth_multiplier=2),
                              keras.layers.SeparableConv2D(8, 3, padding="same")])
    path = str(tmp_path / "dw.keras")
    model.save(path)
    x = np.random.default_rng(7).standard_normal((2, 15, 13, 12)).astype(np.float32)
    expected = model.predict(x, verbose=0)
    with settings.override(tuning=TILED[0]), kg.load_model(path) as loaded:
        with kg.profile(gpu_timing=False) as p:
            for _ in range(4):
                assert_close(loaded.predict(x, verbose=0), expected)
        assert loaded.plan_info()[0].status == "planned"
    assert len(tiled_kernels(p)) == 4 * 3
