"""Load-time fusions (kerasgl/compiler/fusion.py) against Keras 3: each fusion keeps the results of Keras
(within 1e-4) and removes dispatches; the cases where fusing would be wrong leave the graph alone.

Dispatches are counted by wrapping kerasgl.ops.dispatch.run (the GL work still runs)."""
from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl.compiler import fusion
from kerasgl.ops import dispatch

L = keras.layers


@contextmanager
def counting(monkeypatch):
    calls = []
    original = dispatch.run

    def counted(name, **kwargs):
        calls.append(name)
        return original(name, **kwargs)
    monkeypatch.setattr(dispatch, "run", counted)
    try:
        yield calls
    finally:
        monkeypatch.setattr(dispatch, "run", original)


def run_both(model, tmp_path, monkeypatch, x=None, seed=0, fmt=".keras"):
    """Randomise the model, then predict with kerasgl fused and unfused. Returns
    (keras output, fused output, fused dispatches, unfused dispatches, fusions)."""
    randomize_weights(model, seed)
    if x is None:
        rng = np.random.default_rng(seed + 1)
        x = [rng.uniform(-1, 1, (2,) + tuple(i.shape[1:])).astype("float32") for i in model.inputs]
        x = x[0] if len(x) == 1 else x
    expected = model.predict(x, verbose=0)
    path = os.path.join(str(tmp_path), f"{model.name}{fmt}")
    model.save(path)
    with kg.load_model(path) as loaded:
        with counting(monkeypatch) as fused_calls:
            fused = loaded.predict(x, verbose=0)
        fusions = [(f.host, list(f.absorbed)) for f in fusion.fusions_of(loaded._graph)]
    with fusion.disabled(), kg.load_model(path) as plain:
        with counting(monkeypatch) as plain_calls:
            unfused = plain.predict(x, verbose=0)
        assert not fusion.fusions_of(plain._graph)
    assert_close(unfused, expected, what="unfused")
    assert_close(fused, expected, what="fused")
    return expected, fused, len(fused_calls), len(plain_calls), fusions


def seq(name, input_shape, *layers):
    return keras.Sequential([keras.Input(input_shape), *layers], name=name)


def saved_with_input(model, tmp_path, batch=1):
    """Randomise and save the model; (its path, an input of `batch` samples for it)."""
    randomize_weights(model)
    shape = (batch,) + tuple(model.inputs[0].shape[1:])
    x = np.random.default_rng(0).uniform(-1, 1, shape).astype("float32")
    path = str(tmp_path / f"{model.name}.keras")
    model.save(path)
    return path, x


# -------------------------------------------------------------------------------------------------
# Each fusion where it applies
# -------------------------------------------------------------------------------------------------
def test_conv_bn_relu_is_one_dispatch(tmp_path, monkeypatch):
    model = seq("cbr", (9, 9, 3), L.Conv2D(8, 3, name="conv1"), L.BatchNormalization(name="bn1"),
                L.ReLU(name="relu1"), L.Conv2D(4, 1, use_bias=False, name="conv2"),
                L.BatchNormalization(name="bn2"), L.Activation("relu6", name="act2"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("conv1", ["bn1", "relu1"]), ("conv2", ["bn2", "act2"])]
    assert fused == plain - 4


@pytest.mark.parametrize("make", [
    lambda: L.DepthwiseConv2D(3, padding="same", depth_multiplier=2, name="host"),
    lambda: L.SeparableConv2D(6, 3, name="host"),
    lambda: L.Conv2DTranspose(5, 3, strides=2, name="host"),
    lambda: L.Conv1D(6, 3, name="host"),
], ids=["depthwise", "separable", "transpose", "conv1d"])
def test_bn_and_activation_into_every_conv(make, tmp_path, monkeypatch):
    host = make()
    shape = (10, 4) if isinstance(host, L.Conv1D) else (8, 8, 4)
    model = seq("convs", shape, host, L.BatchNormalization(name="bn"),
                L.LeakyReLU(negative_slope=0.1, name="act"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("host", ["bn", "act"])]
    assert fused == plain - 2


def test_dense_bn_activation(tmp_path, monkeypatch):
    inputs = keras.Input((5, 6))
    x = L.Dense(7, name="d1")(inputs)
    x = L.BatchNormalization(axis=2, name="bn1")(x)          # the last axis, by position
    x = L.Activation("gelu", name="gelu1")(x)
    x = L.Dense(3, name="d2")(x)
    x = L.BatchNormalization(name="bn2")(x)
    x = L.Activation("sigmoid", name="sig")(x)
    model = keras.Model(inputs, x, name="dense_chain")
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("d1", ["bn1", "gelu1"]), ("d2", ["bn2", "sig"])]
    assert fused == plain - 4


def test_dense_with_own_activation_takes_no_second_one(tmp_path, monkeypatch):
    model = seq("dense_relu", (6,), L.Dense(5, activation="relu", name="d"),
                L.BatchNormalization(name="bn"), L.Activation("tanh", name="t"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [] and fused == plain


def test_add_then_activation(tmp_path, monkeypatch):
    """A residual block: conv -> BN -> ReLU and a second conv -> BN, added, then ReLU (ResNet's
    pattern); the Add takes the ReLU in its epilogue."""
    inputs = keras.Input((8, 8, 4))
    y = L.Conv2D(4, 3, padding="same", name="c1")(inputs)
    y = L.BatchNormalization(name="b1")(y)
    y = L.Activation("relu", name="r1")(y)
    y = L.Conv2D(4, 3, padding="same", name="c2")(y)
    y = L.BatchNormalization(name="b2")(y)
    x = L.Add(name="add")([inputs, y])
    x = L.Activation("relu", name="out_relu")(x)
    z = L.Add(name="add3")([x, inputs, y])       # three inputs: the activation on the last dispatch
    z = L.ELU(alpha=0.5, name="elu")(z)
    model = keras.Model(inputs, z, name="residual")
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("c1", ["b1", "r1"]), ("c2", ["b2"]), ("add", ["out_relu"]),
                       ("add3", ["elu"])]
    assert fused == plain - 5


def test_keras_ops_add_then_activation(tmp_path, monkeypatch):
    """keras.ops.add / `+` recorded as op nodes, followed by a ReLU layer or a keras.ops.relu."""
    a, b = keras.Input((6,)), keras.Input((6,))
    s = L.ReLU(name="relu_layer")(keras.ops.add(a, b))
    t = keras.ops.relu(a + 2.0)
    u = keras.ops.sigmoid(s * t)
    model = keras.Model([a, b], [u, s], name="ops_add")
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert len(fusions) == 3 and all(len(absorbed) == 1 for _, absorbed in fusions)
    assert fused == plain - 3


def test_zero_padding_into_valid_conv(tmp_path, monkeypatch):
    model = seq("padded", (9, 8, 3), L.ZeroPadding2D(((1, 2), (0, 1)), name="pad"),
                L.Conv2D(5, 3, strides=2, name="conv"), L.BatchNormalization(name="bn"),
                L.ReLU(6.0, name="relu6"), L.ZeroPadding2D(1, name="pad2"),
                L.DepthwiseConv2D(3, name="dw"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("conv", ["pad", "bn", "relu6"]), ("dw", ["pad2"])]
    assert fused == plain - 4


def test_zero_padding_1d(tmp_path, monkeypatch):
    model = seq("padded1d", (7, 3), L.ZeroPadding1D((2, 1), name="pad"), L.Conv1D(4, 3, name="c"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("c", ["pad"])] and fused == plain - 1


def test_zero_padding_into_valid_pooling(tmp_path, monkeypatch):
    """The pooling reads the padding's zeros itself: they win a max over negative values (no
    activation before it) and count in an average, windows made only of padding included."""
    model = seq("padpool", (9, 8, 4), L.Conv2D(8, 3, name="conv"),
                L.ZeroPadding2D(((1, 2), (0, 3)), name="pad"),
                L.MaxPooling2D(3, strides=2, name="pool"),
                L.ZeroPadding2D(1, name="pad2"), L.AveragePooling2D(2, name="avg"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("pool", ["pad"]), ("avg", ["pad2"])] and fused == plain - 2
    model = seq("padpool1d", (7, 3), L.Conv1D(4, 2, name="c"), L.ZeroPadding1D((2, 1), name="pad"),
                L.MaxPooling1D(2, name="pool"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("pool", ["pad"])] and fused == plain - 1


def test_no_padding_into_same_pooling(tmp_path, monkeypatch):
    model = seq("padsame", (6, 6, 3), L.Conv2D(4, 1, name="conv"), L.ZeroPadding2D(1, name="pad"),
                L.MaxPooling2D(2, padding="same", name="pool"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [] and fused == plain


def test_h5_and_nested_models(tmp_path, monkeypatch):
    """Legacy .h5 files fuse the same way, and so does a model nested as a layer."""
    inner = seq("inner", (6, 6, 3), L.Conv2D(4, 3, name="ic"), L.BatchNormalization(name="ib"),
                L.ReLU(name="ir"))
    model = seq("outer", (6, 6, 3), inner, L.Flatten(), L.Dense(3, name="d"),
                L.Activation("relu", name="dr"))
    _, _, fused, plain, _ = run_both(model, tmp_path, monkeypatch, fmt=".h5")
    assert fused == plain - 3


# -------------------------------------------------------------------------------------------------
# Where fusion must not happen
# -------------------------------------------------------------------------------------------------
def test_bn_output_read_twice_is_not_folded(tmp_path, monkeypatch):
    inputs = keras.Input((6, 6, 3))
    c = L.Conv2D(4, 3, name="conv")(inputs)
    b = L.BatchNormalization(name="bn")(c)
    r = L.ReLU(name="relu")(b)
    model = keras.Model(inputs, L.Add(name="add")([r, b]), name="bn_twice")
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("conv", ["bn"])] and fused == plain - 1    # BN folded, ReLU kept


def test_conv_output_read_twice_is_not_fused(tmp_path, monkeypatch):
    inputs = keras.Input((6, 6, 3))
    c = L.Conv2D(4, 3, name="conv")(inputs)
    b = L.BatchNormalization(name="bn")(c)
    model = keras.Model(inputs, L.Add(name="add")([c, b]), name="conv_twice")
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [] and fused == plain


def test_model_outputs_are_not_fused_away(tmp_path, monkeypatch):
    inputs = keras.Input((6, 6, 3))
    b = L.BatchNormalization(name="bn")(L.Conv2D(4, 3, name="conv")(inputs))
    r = L.ReLU(name="relu")(b)
    model = keras.Model(inputs, [r, b], name="bn_output")
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    # The BN (an output) may be folded, its value is the fused conv's; the ReLU after it may not.
    assert fusions == [("conv", ["bn"])] and fused == plain - 1
    # The last layer of a chain may be an output: its value is the fused producer's.
    model = seq("relu_output", (6, 6, 3), L.Conv2D(4, 3, name="conv"),
                L.BatchNormalization(name="bn"), L.ReLU(name="relu"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("conv", ["bn", "relu"])] and fused == plain - 2


def test_softmax_and_prelu_are_not_fused(tmp_path, monkeypatch):
    model = seq("softmax", (6, 6, 3), L.Conv2D(4, 3, name="conv"), L.Activation("softmax"),
                L.Conv2D(4, 1, name="conv2"), L.PReLU(), L.Dense(3, name="d"), L.Softmax())
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [] and fused == plain


def test_bn_on_another_axis_is_not_folded(tmp_path, monkeypatch):
    """channels_first convolutions keep their BN, and so does a channels-last convolution followed
    by a BN over a spatial axis of the same size as the channels."""
    first = seq("first", (4, 6, 6), L.Conv2D(4, 3, data_format="channels_first", name="conv"),
                L.BatchNormalization(axis=1, name="bn"), L.ReLU(name="relu"))
    _, _, fused, plain, fusions = run_both(first, tmp_path, monkeypatch)
    assert fusions == [] and fused == plain
    spatial = seq("spatial_bn", (6, 6, 3), L.Conv2D(4, 3, name="conv"),
                  L.BatchNormalization(axis=1, name="bn"))
    _, _, fused, plain, fusions = run_both(spatial, tmp_path, monkeypatch)
    assert fusions == [] and fused == plain
    steps = seq("steps_bn", (4, 6), L.Dense(4, name="d"), L.BatchNormalization(axis=1, name="bn"))
    _, _, fused, plain, fusions = run_both(steps, tmp_path, monkeypatch)
    assert fusions == [] and fused == plain


def test_shared_layers_are_not_fused(tmp_path, monkeypatch):
    """A convolution called twice has one set of weights: folding a BN for one call would change
    the other."""
    inputs = keras.Input((6, 6, 3))
    conv = L.Conv2D(3, 3, padding="same", name="shared")
    y = L.BatchNormalization(name="bn")(conv(conv(inputs)))
    model = keras.Model(inputs, y, name="shared_conv")
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [] and fused == plain


def test_no_fold_backwards_and_no_padding_into_same_conv(tmp_path, monkeypatch):
    model = seq("backwards", (6, 6, 3), L.BatchNormalization(name="bn"),
                L.Conv2D(4, 3, padding="same", name="conv"), L.ZeroPadding2D(1, name="pad"),
                L.Conv2D(4, 3, padding="same", name="conv2"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [] and fused == plain


def test_no_fusion_where_masks_flow(tmp_path, monkeypatch):
    model = seq("masked", (5,), L.Embedding(10, 6, mask_zero=True), L.Dense(4, name="d"),
                L.BatchNormalization(name="bn"), L.ReLU(name="r"), L.LSTM(3))
    x = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 0]], dtype="int32")
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch, x=x)
    assert fusions == [] and fused == plain


def refuses_fused_reads_kept(loaded, model, x, refused: dict, kept: str) -> str:
    """Asking the loaded model for each fused-away layer's output raises FusedOutputError
    matching refused[name]; the output of `kept` (what the fusion computes) matches Keras's.
    Returns the summary text."""
    for name, pattern in refused.items():
        with pytest.raises(fusion.FusedOutputError, match=pattern):
            loaded.predict(x, outputs=name, verbose=0)
    reference = keras.Model(model.inputs, model.get_layer(kept).output)
    assert_close(loaded.predict(x, outputs=kept, verbose=0), reference.predict(x, verbose=0))
    lines = []
    loaded.summary(print_fn=lines.append)
    return lines[0]


def test_asking_for_a_fused_output_names_the_fusion(tmp_path):
    model = seq("ask", (6, 6, 3), L.Conv2D(4, 3, name="conv"), L.BatchNormalization(name="bn"),
                L.ReLU(name="relu"), L.Flatten(name="flat"))
    path, x = saved_with_input(model, tmp_path)
    with kg.load_model(path) as loaded:
        text = refuses_fused_reads_kept(loaded, model, x, {
            name: f"'{name}'.*'conv' \\(\\+bn, \\+relu\\)" for name in ("conv", "bn")}, "relu")
        assert "conv (Conv2D)" in text and "+ fused in: bn, relu" in text
        assert "fused into conv" in text
    with fusion.disabled(), kg.load_model(path) as plain:
        bn = keras.Model(model.inputs, model.get_layer("bn").output)
        assert_close(plain.predict(x, outputs="bn", verbose=0), bn.predict(x, verbose=0))


def test_folded_bn_weights_are_not_uploaded(tmp_path):
    model = seq("weights", (6, 6, 3), L.Conv2D(4, 3, name="conv"), L.BatchNormalization(name="bn"))
    path = str(tmp_path / "w.keras")
    model.save(path)
    with kg.load_model(path) as fused:
        assert fused.count_params() == model.count_params()     # as Keras counts, BN included
        assert not fused.get_layer("bn")._gpu_weights
    with fusion.disabled(), kg.load_model(path) as plain:
        assert len(plain.get_layer("bn")._gpu_weights) == 2


# -- MaxPooling2D into the convolution before it -------------------------------------------------
def test_conv_relu_max_pool_is_one_dispatch(tmp_path, monkeypatch):
    """Odd sizes (11x11 -> 5x5: the last row and column of the convolution are dropped), a
    batch of 2, strides and a BatchNormalization in the chain."""
    model = seq("pooled", (13, 13, 8), L.Conv2D(24, 3, name="c1", activation="relu"),
                L.MaxPooling2D(name="p1"), L.Conv2D(36, 3, strides=1, padding="same", name="c2"),
                L.BatchNormalization(name="bn"), L.ReLU(6.0, name="r6"),
                L.MaxPooling2D((2, 2), strides=2, name="p2"), L.Flatten(), L.Dense(3, name="d"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("c1", ["p1"]), ("c2", ["bn", "r6", "p2"])]
    assert fused == plain - 4


def test_linear_conv_and_a_channel_count_off_vec4(tmp_path, monkeypatch):
    model = seq("pooled_lin", (10, 9, 3), L.Conv2D(6, 3, name="c"), L.MaxPooling2D(name="p"))
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert fusions == [("c", ["p"])] and fused == plain - 1


@pytest.mark.parametrize("pool,activation", [
    (L.MaxPooling2D(3, name="p"), "relu"),                     # 3x3 windows: not fused
    (L.MaxPooling2D(2, strides=1, name="p"), "relu"),          # overlapping windows
    (L.MaxPooling2D(2, padding="same", name="p"), "relu"),     # padded windows
    (L.AveragePooling2D(2, name="p"), "relu"),                 # not a max
    (L.MaxPooling2D(2, name="p"), "tanh"),                     # not a clamp activation
    (L.MaxPooling2D(2, name="p"), "softmax"),                  # not pointwise
])
def test_pools_that_are_not_fused(pool, activation, tmp_path, monkeypatch):
    model = seq("unpooled", (9, 9, 4), L.Conv2D(8, 3, activation=activation, name="c"), pool)
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert all("p" not in absorbed for _, absorbed in fusions)


def test_a_pooled_conv_reports_keras_shapes_and_refuses_its_inner_output(tmp_path):
    model = seq("pooled_ask", (9, 9, 4), L.Conv2D(8, 3, activation="relu", name="c"),
                L.MaxPooling2D(name="p"), L.BatchNormalization(name="bn"))
    path, x = saved_with_input(model, tmp_path)
    with kg.load_model(path) as loaded:
        with pytest.raises(fusion.FusedOutputError, match="'c'.*'c' \\(\\+p\\)"):
            loaded.predict(x, outputs="c", verbose=0)
        pooled = keras.Model(model.inputs, model.get_layer("p").output)
        assert_close(loaded.predict(x, outputs="p", verbose=0), pooled.predict(x, verbose=0))
        assert_close(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
        lines = []
        loaded.summary(print_fn=lines.append)
        assert "(None, 7, 7, 8)" in lines[0] and "(None, 3, 3, 8)" in lines[0]


# -- Add (a residual connection) into the convolution producing one of its inputs ---------------
def _residual_model(project: bool, activation: str | None = "relu"):
    """ResNet's two blocks: the input added back (identity), or a projected shortcut
    (conv + BatchNormalization, made before the main branch as Keras's ResNet does)."""
    x = keras.Input((7, 7, 8), name="x")
    width = 16 if project else 8
    shortcut = L.BatchNormalization(name="bn0")(L.Conv2D(16, 1, name="c0")(x)) if project else x
    h = L.Conv2D(8, 3, padding="same", activation="relu", name="c1")(x)
    h = L.Conv2D(width, 1, name="c2")(h)
    h = L.BatchNormalization(name="bn2")(h)
    h = L.Dropout(0.2, noise_shape=(None, 1, 1, 1), name="drop")(h)   # as EfficientNet's blocks
    out = L.Add(name="add")([shortcut, h])
    if activation:
        out = L.Activation(activation, name="act")(out)
    return keras.Model(x, L.GlobalAveragePooling2D(name="gap")(out), name=f"res_{project}_{activation}")


@pytest.mark.parametrize("project", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", None])
def test_residual_add_and_activation_go_into_the_convolution(project, activation, tmp_path,
                                                            monkeypatch):
    _, _, fused, plain, fusions = run_both(_residual_model(project, activation), tmp_path,
                                           monkeypatch)
    hosts = dict(fusions)
    added = ["add"] + (["act"] if activation else [])     # "drop" (inference: a view) is passed
    if project:
        # Into whichever convolution runs second (Keras's node order decides), with its BN.
        assert sorted([hosts["c0"], hosts["c2"]]) == sorted([["bn0"] + added, ["bn2"]]) or \
            sorted([hosts["c0"], hosts["c2"]]) == sorted([["bn0"], ["bn2"] + added])
    else:
        assert hosts["c2"] == ["bn2"] + added


def test_residual_fusion_keeps_the_sum_readable_and_refuses_the_parts(tmp_path):
    model = _residual_model(True, None)
    path, x = saved_with_input(model, tmp_path, batch=2)
    with kg.load_model(path) as loaded:
        host = next(f.host for f in fusion.fusions_of(loaded._graph) if "add" in f.absorbed)
        text = refuses_fused_reads_kept(loaded, model, x, {
            name: f"'{name}'" for name in ((host, "bn2", "drop") if host == "c2" else (host, "bn0"))},
            "add")
        assert "add (Add)" in text and ("fused into c2" in text or "fused into c0" in text)
        conv_row = next(line for line in text.splitlines() if line.startswith(f"{host} ("))
        assert ("bn0" not in conv_row and "c0," not in conv_row) if host == "c2" else "c2" not in conv_row


@pytest.mark.parametrize("case", ["broadcast", "read_twice", "own_activation", "groups",
                                  "channels", "three_inputs", "later_input"])
def test_adds_that_stay_separate(case, tmp_path, monkeypatch):
    x = keras.Input((6, 6, 8), name="x")
    if case == "broadcast":            # the other input is broadcast along height and width
        conv = L.Conv2D(8, 1, name="c")(x)
        out = L.Add(name="add")([conv, L.GlobalAveragePooling2D(keepdims=True, name="g")(x)])
    elif case == "read_twice":         # the convolution's output is also read elsewhere
        conv = L.Conv2D(8, 1, name="c")(x)
        out = L.Concatenate(name="cat")([L.Add(name="add")([x, conv]), conv])
    elif case == "own_activation":     # act(conv) + x is not conv + x
        out = L.Add(name="add")([x, L.Conv2D(8, 1, activation="relu", name="c")(x)])
    elif case == "groups":
        out = L.Add(name="add")([x, L.Conv2D(8, 1, groups=2, name="c")(x)])
    elif case == "channels":           # output channels not a multiple of 4
        y = L.Conv2D(6, 1, name="c0")(x)
        out = L.Add(name="add")([y, L.Conv2D(6, 1, name="c")(y)])
        out = L.Add(name="add2")([L.Conv2D(6, 1, name="c2")(x), out])
    elif case == "three_inputs":
        out = L.Add(name="add")([x, x, L.Conv2D(8, 1, name="c")(x)])
    else:                              # the other input is computed after the convolution
        conv = L.Conv2D(8, 1, name="c")(x)
        out = L.Add(name="add")([conv, L.Activation("tanh", name="later")(x)])
    model = keras.Model(x, out, name=f"sep_{case}")
    _, _, fused, plain, fusions = run_both(model, tmp_path, monkeypatch)
    assert all("add" not in absorbed and "add2" not in absorbed for _, absorbed in fusions)
