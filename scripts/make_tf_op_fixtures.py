"""Write the TensorFlow-operation fixtures in tests/data/tf_ops/.

Real Keras 2 files hold `tf.*` calls made on symbolic tensors inside functional models. tf.keras
(TF >= 2.4, and tf-keras) saves each such call as a `TFOpLambda` layer (its `slice_spec` form,
`x[...]`, as `SlicingOpLambda`), config `function` naming the TensorFlow symbol
("nn.depth_to_space", "image.resize", "__operators__.getitem", "compat.v1.gather"), its inbound
node holding the call: the first argument as the node's tensor, every other argument by keyword
(tensors among them as [layer, node_index, tensor_index] lists). A first argument that is a list
(concat, stack, add_n) becomes one node entry per element, each repeating the keywords; a first
argument that is not a tensor (2.0 - x, tf.range(0, n)) is saved as
["_CONSTANT_VALUE", -1, value, {keywords}]. TF 2.0 - 2.3 saved the same calls as
`TensorFlowOpLayer` layers holding a serialized NodeDef.

tf-keras records the symbol the call dispatched to, not the one written: tf.transpose, tf.squeeze,
tf.pad, tf.gather and tf.shape become "compat.v1.transpose" / ".squeeze" / ".pad" / ".gather" /
".shape"; tf.compat.v1.depth_to_space "compat.v1.nn.depth_to_space"; tf.matmul and @
"linalg.matmul"; tf.nn.swish "nn.silu"; tf.nn.sigmoid / tanh / softplus "math.*";
tf.nn.l2_normalize "math.l2_normalize"; tf.math.softmax / log_softmax "nn.*"; // and
tf.math.floordiv "compat.v1.floor_div"; % and tf.math.mod "math.floormod"; / and tf.math.divide
"math.truediv"; + "__operators__.add" but tf.add "math.add"; tf.compat.v1.image.resize
"compat.v1.image.resize_images"; tf.compat.v1.reduce_mean(keep_dims=...) "math.reduce_mean" with
keepdims. MANIFEST.json has the exact names per fixture.

Run under TensorFlow + tf-keras (not the project venv, which has Keras 3 only), e.g.:

    python3 -m venv /work/venv-tf
    /work/venv-tf/bin/pip install tensorflow-cpu==2.21.0 tf-keras==2.21.0 h5py
    /work/venv-tf/bin/python scripts/make_tf_op_fixtures.py

Each model is saved with tf-keras' `model.save("<name>.h5")` (Keras 2 HDF5), next to
`<name>.npz` holding:
  input_0, input_1, ...     the inputs fed to model.predict (in model.inputs order)
  output_0, output_1, ...   what tf-keras computed for them (model.predict; float32 unless the
                            op gives another dtype: argmax int64, cast int32 / bool, ...)
  weights/<layer>/<i>       layer.get_weights()[i] (only the fixtures with Keras layers)
and MANIFEST.json maps each fixture to the sorted `function` names of its TFOpLambda /
SlicingOpLambda layers ("fixtures"; "all_functions" is their union), which of those are
SlicingOpLambda ("slicing_op_lambda"), the NodeDef ops of its TensorFlowOpLayer layers
("tensorflow_op_layer_ops"), the fixtures tf-keras cannot load back ("unloadable_in_tf_keras"),
and the TensorFlow / tf-keras versions that wrote them ("tensorflow", "tf_keras"). The script
reloads every file with tf-keras and asserts that the reloaded model predicts the saved outputs
(same shapes and dtypes, within 1e-6).
`python scripts/make_tf_op_fixtures.py NAME ...` rewrites only the named fixtures (each is seeded
from its own name, so one fixture alone comes out the same as in a full run; MANIFEST.json keeps
the other fixtures' entries).

The fixtures, by family:
  depth_space                 tf.nn.depth_to_space / space_to_depth, block sizes 2 and 3
  subpixel_upsamplers         Conv2D + depth_to_space upsamplers as ESPCN (x3, clip_by_value)
                              and Fast-SRGAN (x2 twice, PReLU shared over H, W) build them
  image_resize_up             tf.image.resize, all eight methods, antialias False / True,
                              upscaling (non-integer and x2), preserve_aspect_ratio, default
                              method, size from tf.shape of another input (U-Net skip)
  image_resize_down           the same methods and antialias settings, downscaling
  layout_ops                  concat, stack, unstack, split (num / size_splits), reshape,
                              transpose, tile, expand_dims, squeeze
  pad_and_gather              tf.pad (CONSTANT + constant_values, REFLECT, SYMMETRIC),
                              tf.gather (constant indices, 2-D indices, indices from an int
                              input with batch_dims=1), tf.slice
  slicing                     x[...] in its forms (__operators__.getitem) and tf.strided_slice
                              with begin / end / ellipsis / new_axis / shrink_axis masks
  elementwise_unary           tf.math unary ops, on inputs that hold exact halves and zeros
  elementwise_binary          tf.math binary ops and Python operators (reversed ones too),
                              broadcasting, add_n, bias_add
  comparisons_and_where       comparisons and logical ops feeding tf.where and tf.cast
  reductions                  reduce_mean / sum / max / min / prod / std / variance /
                              logsumexp / any / all (axis lists, keepdims), argmax / argmin
  activations_and_normalize   clip_by_value, tf.nn activations, l2_normalize, softmax /
                              log_softmax with axis
  matmul                      tf.matmul (transpose_a / b, batched, constant operand), @,
                              tf.linalg.matmul
  einsum_operands_lost        tf.einsum: tf-keras saves the equation but drops the operands, so
                              the file does not load back in tf-keras either (the npz holds the
                              live model's outputs; MANIFEST.json lists it under
                              "unloadable_in_tf_keras")
  cast_onehot_shape           tf.cast, tf.one_hot, tf.shape-derived reshapes and slices,
                              tf.range, zeros_like / ones_like
  compat_v1_spellings         tf.compat.v1 names (transpose, depth_to_space, image.resize_*,
                              reduce_mean keep_dims, squeeze squeeze_dims, ...)
  tf_op_layer_graph_mode      TensorFlowOpLayer layers (node_def + constants), the form
                              TF 2.0 - 2.3 wrote: tf-keras still writes it when eager
                              execution is disabled, so the script builds this one in a
                              subprocess with tf.compat.v1.disable_eager_execution() and
                              reloads it in eager mode too
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402
from tf_keras import layers  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "tf_ops")
MANIFEST = os.path.join(OUT, "MANIFEST.json")
GRAPH_MODE_FLAG = "--graph-mode"
RNG = np.random.default_rng(1234)


# ------------------------------------------------------------------------------------------------
# Saving and checking
# ------------------------------------------------------------------------------------------------

def as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def weight_arrays(model) -> dict[str, np.ndarray]:
    return {f"weights/{layer.name}/{i}": np.asarray(w)
            for layer in model.layers for i, w in enumerate(layer.get_weights())}


def randomize_all(model, low: float = -0.5, high: float = 0.5) -> None:
    for var in model.weights:
        var.assign(RNG.uniform(low, high, var.shape).astype("float32"))


def normal(shape, scale: float = 1.0) -> np.ndarray:
    return RNG.normal(0, scale, shape).astype("float32")


def halves(shape, low: int = -7, high: int = 7) -> np.ndarray:
    """Exact multiples of 0.5 (zeros and .5 ties included): round / floor / sign / mod edges."""
    return (RNG.integers(low, high + 1, shape) / 2).astype("float32")


def inputs_for(model, batch: int = 2) -> list[np.ndarray]:
    return [normal((batch,) + tuple(t.shape[1:])) for t in model.inputs]


def predict(model, inputs):
    return [np.asarray(y) for y in
            as_list(model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0))]


def check_reload(path: str, inputs, outputs) -> None:
    reloaded = keras.models.load_model(path, compile=False)
    again = predict(reloaded, inputs)
    assert len(again) == len(outputs), (path, len(again), len(outputs))
    for i, (a, b) in enumerate(zip(outputs, again)):
        assert a.dtype == b.dtype and a.shape == b.shape, (path, i, a.dtype, b.dtype, a.shape,
                                                            b.shape)
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"{path} output {i}")


def op_layers(model) -> dict:
    """What the model's TensorFlow-operation layers became: function names by layer class."""
    found = {"TFOpLambda": set(), "SlicingOpLambda": set(), "TensorFlowOpLayer": set()}
    for layer in model.layers:
        kind = type(layer).__name__
        if kind in ("TFOpLambda", "SlicingOpLambda"):
            found[kind].add(layer.get_config()["function"])
        elif kind == "TensorFlowOpLayer":
            found[kind].add(layer.node_def.op)
    return found


def manifest_entry(model) -> dict:
    found = op_layers(model)
    return {"functions": sorted(found["TFOpLambda"] | found["SlicingOpLambda"]),
            "slicing_op_lambda": sorted(found["SlicingOpLambda"]),
            "tensorflow_op_layer_ops": sorted(found["TensorFlowOpLayer"])}


def save_fixture(model, name: str, inputs: list[np.ndarray] | None = None,
                 reloads: bool = True) -> dict:
    """<name>.h5 + <name>.npz; returns the fixture's manifest entry. With reloads=False the file
    is one tf-keras writes but cannot load: the check is then that loading fails."""
    inputs = inputs if inputs is not None else inputs_for(model)
    outputs = predict(model, inputs)
    for i, y in enumerate(outputs):
        if y.dtype.kind == "f":
            assert np.all(np.isfinite(y)), f"{name}: output {i} is not finite"
    path = os.path.join(OUT, f"{name}.h5")
    model.save(path, include_optimizer=False)
    arrays = {f"input_{i}": x for i, x in enumerate(inputs)}
    arrays.update({f"output_{i}": y for i, y in enumerate(outputs)})
    arrays.update(weight_arrays(model))
    np.savez_compressed(os.path.join(OUT, f"{name}.npz"), **arrays)
    if reloads:
        check_reload(path, inputs, outputs)
    else:
        try:
            keras.models.load_model(path, compile=False)
        except ValueError as error:
            reason = [line for line in str(error).splitlines() if line.startswith("Got ")]
            print(f"{name}: tf-keras cannot load it back, as expected: {reason}")
        else:
            raise AssertionError(f"{name}: tf-keras loaded it; make it an ordinary fixture")
    entry = manifest_entry(model)
    entry["reloads_in_tf_keras"] = reloads
    # What the file says must be what the live model had.
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["model_config"])
    saved = sorted({e["config"]["function"] for e in config["config"]["layers"]
                    if e["class_name"] in ("TFOpLambda", "SlicingOpLambda")})
    assert saved == entry["functions"], (name, saved, entry["functions"])
    return entry


# ------------------------------------------------------------------------------------------------
# The fixtures
# ------------------------------------------------------------------------------------------------

def depth_space():
    """depth_to_space / space_to_depth with block sizes 2 and 3, and their round trips."""
    x = keras.Input((4, 4, 36), name="x")
    a = tf.nn.depth_to_space(x, 2)                      # (8, 8, 9)
    b = tf.nn.depth_to_space(x, block_size=3)           # (12, 12, 4)
    c = tf.nn.space_to_depth(x, 2)                      # (2, 2, 144)
    d = tf.nn.space_to_depth(b, 3)                      # back to (4, 4, 36)
    e = tf.nn.space_to_depth(tf.nn.depth_to_space(x, 2), 2)   # back to x
    model = keras.Model(x, [a, b, c, d, e], name="depth_space")
    return save_fixture(model, "depth_space")


def subpixel_upsamplers():
    """Sub-pixel convolution upsamplers as published super-resolution models build them: ESPCN
    (conv 5x5 tanh, conv 3x3 tanh, conv to C*r^2, depth_to_space r=3, clip to [0, 1]) and the
    Fast-SRGAN block (conv to 4C, depth_to_space 2, PReLU shared over H and W, twice)."""
    x = keras.Input((6, 6, 3), name="low_res")
    e = layers.Conv2D(8, 5, padding="same", activation="tanh", name="espcn_conv1")(x)
    e = layers.Conv2D(4, 3, padding="same", activation="tanh", name="espcn_conv2")(e)
    e = layers.Conv2D(3 * 9, 3, padding="same", name="espcn_to_subpixel")(e)
    e = tf.nn.depth_to_space(e, 3)
    e = tf.clip_by_value(e, 0.0, 1.0)
    f = layers.Conv2D(4, 3, padding="same", name="srgan_conv")(x)
    for i in (1, 2):
        f = layers.Conv2D(4 * 4, 3, padding="same", name=f"srgan_up{i}_conv")(f)
        f = tf.nn.depth_to_space(f, 2)
        f = layers.PReLU(shared_axes=[1, 2], name=f"srgan_up{i}_prelu")(f)
    f = layers.Conv2D(3, 3, padding="same", activation="tanh", name="srgan_out")(f)
    model = keras.Model(x, [e, f], name="subpixel_upsamplers")
    randomize_all(model)
    return save_fixture(model, "subpixel_upsamplers",
                        [RNG.uniform(0, 1, (2, 6, 6, 3)).astype("float32")])


RESIZE_METHODS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
                  "mitchellcubic")


def image_resize_up():
    """tf.image.resize upscaling (6x8 -> 9x13 and x2) with every method, antialias off and on;
    preserve_aspect_ratio; the default method with `size` positional; size from tf.shape."""
    x = keras.Input((6, 8, 2), name="image")
    skip = keras.Input((11, 10, 3), name="skip")
    outs = []
    for method in RESIZE_METHODS:
        for antialias in (False, True):
            outs.append(tf.image.resize(x, (9, 13), method=method, antialias=antialias))
    outs += [tf.image.resize(x, [12, 16], method=m) for m in ("bilinear", "nearest", "bicubic")]
    outs.append(tf.image.resize(x, [12, 12], method="bilinear", preserve_aspect_ratio=True))
    outs.append(tf.image.resize(x, [10, 10], method="nearest", preserve_aspect_ratio=True,
                                antialias=True))
    outs.append(tf.image.resize(x, [15, 20]))
    outs.append(tf.image.resize(x, tf.shape(skip)[1:3], method="bilinear"))
    outs.append(tf.image.resize(x, size=tf.shape(skip)[1:3] * 2, method="nearest"))
    model = keras.Model([x, skip], outs, name="image_resize_up")
    return save_fixture(model, "image_resize_up")


def image_resize_down():
    """tf.image.resize downscaling (12x15 -> 5x6, 12x15 -> 4x5: integer factor 3) with every
    method, antialias off and on; preserve_aspect_ratio; mixed (down one axis, up the other)."""
    x = keras.Input((12, 15, 2), name="image")
    outs = []
    for method in RESIZE_METHODS:
        for antialias in (False, True):
            outs.append(tf.image.resize(x, (5, 6), method=method, antialias=antialias))
    for method in ("bilinear", "area", "bicubic"):
        outs.append(tf.image.resize(x, (4, 5), method=method, antialias=True))
    outs.append(tf.image.resize(x, [6, 6], method="area", preserve_aspect_ratio=True))
    outs.append(tf.image.resize(x, [4, 20], method="bilinear", antialias=True))
    outs.append(tf.image.resize(x, [4, 20], method="lanczos3", antialias=False))
    model = keras.Model(x, outs, name="image_resize_down")
    return save_fixture(model, "image_resize_down")


def layout_ops():
    """concat (2 and 3 tensors, with a constant-free negative axis), stack, unstack, split by
    number and by sizes (one -1), reshape (-1), transpose, tile, expand_dims, squeeze."""
    x = keras.Input((3, 4, 6), name="x")
    y = keras.Input((3, 4, 2), name="y")
    outs = [
        tf.concat([x, y], axis=-1),
        tf.concat([x, x * 2.0, x], 1),
        tf.stack([x, x + 1.0], axis=1),
        tf.stack([y, y, y], axis=-1),
    ]
    u0, u1, u2 = tf.unstack(x, axis=1)
    outs += [u0, u2 - u1]
    outs += [tf.unstack(y, num=2, axis=-1)[1]]
    s = tf.split(x, 3, axis=-1)
    outs += [s[0], s[2]]
    t = tf.split(x, [1, 3], axis=2)
    outs += [t[0], t[1]]
    v = tf.split(x, num_or_size_splits=[2, -1, 1], axis=-1)
    outs += [v[1]]
    outs += [
        tf.reshape(x, [-1, 12, 6]),
        tf.reshape(x, (-1, 72)),
        tf.reshape(y, shape=[-1, 2, 3, 4]),
        tf.transpose(x, [0, 3, 1, 2]),
        tf.transpose(x, perm=[0, 2, 1, 3]),
        tf.tile(y, [1, 2, 1, 3]),
        tf.expand_dims(y, 1),
        tf.expand_dims(y, axis=-1),
        tf.squeeze(tf.expand_dims(y, 2), axis=2),
        tf.squeeze(y[:, :, :1, :1], axis=[2, 3]),
    ]
    model = keras.Model([x, y], outs, name="layout_ops")
    return save_fixture(model, "layout_ops")


def pad_and_gather():
    """tf.pad in its modes (recorded as compat.v1.pad), tf.gather with constant indices (1-D,
    2-D, negative axis) and with indices from an int32 input (batch_dims=1 and 0), tf.slice."""
    x = keras.Input((4, 5, 3), name="x")
    idx = keras.Input((3,), name="indices", dtype="int32")
    outs = [
        tf.pad(x, [[0, 0], [1, 2], [0, 1], [0, 0]]),
        tf.pad(x, [[0, 0], [1, 1], [2, 0], [0, 0]], mode="CONSTANT", constant_values=1.5),
        tf.pad(x, [[0, 0], [2, 1], [1, 3], [0, 0]], mode="REFLECT"),
        tf.pad(x, [[0, 0], [2, 3], [1, 0], [0, 1]], mode="SYMMETRIC"),
        tf.pad(x, paddings=[[0, 0], [3, 1], [1, 1], [0, 0]], mode="symmetric"),
        tf.gather(x, [2, 0, 1], axis=1),
        tf.gather(x, [[0, 4], [3, 3]], axis=2),
        tf.gather(x, [2, 1, 2, 0], axis=-1),
        tf.gather(x, idx, axis=1, batch_dims=1),
        tf.gather(x[:, 0], idx, axis=1, batch_dims=1),
        tf.slice(x, [0, 1, 2, 0], [-1, 2, 3, 2]),
    ]
    model = keras.Model([x, idx], outs, name="pad_and_gather")
    inputs = [normal((2, 4, 5, 3)), RNG.integers(0, 4, (2, 3)).astype("int32")]
    return save_fixture(model, "pad_and_gather", inputs)


def slicing():
    """x[...] in the forms people write (SlicingOpLambda "__operators__.getitem") and
    tf.strided_slice with each mask."""
    x = keras.Input((5, 6, 4), name="x")
    outs = [
        x[:, 1:3, ::2],
        x[..., 0],
        x[:, tf.newaxis],
        x[:, None, 1:, :, None],
        x[:, -1],
        x[:, ::-1],
        x[:, -2:, 1:-1],
        x[:, :, 3::-2, 1:3],
        x[..., 1:3],
        x[:, 2, :, -1],
        x[:, 1::2, ..., :2],
        tf.strided_slice(x, [0, 1, 0, 0], [0, 3, 6, 4], [1, 1, 2, 1], begin_mask=1, end_mask=1),
        tf.strided_slice(x, [0, 4], [0, 0], [1, -2], begin_mask=1, end_mask=1),
        tf.strided_slice(x, [0, 1], [0, 3], [1, 1], begin_mask=1, end_mask=1, ellipsis_mask=0),
        tf.strided_slice(x, [0, 0, 2], [0, 0, 3], [1, 1, 1], begin_mask=1, end_mask=1,
                         ellipsis_mask=2, shrink_axis_mask=4),
        tf.strided_slice(x, [0, 0, 1], [0, 0, 4], [1, 1, 1], begin_mask=1, end_mask=1,
                         new_axis_mask=2),
        tf.strided_slice(x, [0, 2, 0, 1], [0, 3, 6, 3], [1, 1, 1, 1], begin_mask=5, end_mask=5,
                         shrink_axis_mask=2),
    ]
    model = keras.Model(x, outs, name="slicing")
    return save_fixture(model, "slicing")


def elementwise_unary():
    """Unary tf.math ops. `x` holds exact halves and zeros (round's half-to-even, sign(0),
    floor / ceil of integers), `pos` is in [0.25, 3] (log / sqrt / rsqrt / reciprocal)."""
    x = keras.Input((4, 6), name="x")
    pos = keras.Input((4, 6), name="pos")
    outs = [
        tf.math.negative(x), -x, tf.math.abs(x), abs(x), tf.abs(x),
        tf.math.exp(x), tf.exp(x), tf.math.log(pos), tf.math.sqrt(pos), tf.sqrt(pos),
        tf.math.rsqrt(pos), tf.math.square(x), tf.square(x), tf.math.sin(x), tf.math.cos(x),
        tf.math.tanh(x), tf.tanh(x), tf.math.sigmoid(x), tf.sigmoid(x),
        tf.math.reciprocal(pos), tf.math.floor(x), tf.math.ceil(x), tf.math.round(x),
        tf.round(x * 3.0), tf.math.sign(x), tf.math.log1p(pos - 0.2), tf.math.expm1(x),
        tf.math.erf(x), tf.math.softplus(x), tf.math.reciprocal_no_nan(x),
    ]
    model = keras.Model([x, pos], outs, name="elementwise_unary")
    inputs = [halves((3, 4, 6)), RNG.uniform(0.25, 3.0, (3, 4, 6)).astype("float32")]
    return save_fixture(model, "elementwise_unary", inputs)


def elementwise_binary():
    """Binary tf.math ops and Python operators: tensor-tensor, tensor-scalar, scalar-tensor
    (reversed operators: the scalar is saved as the node's first "tensor",
    ["_CONSTANT_VALUE", -1, value, {"y": tensor}]), broadcasting (4, 6) against (1, 6) and a
    constant (6,), add_n, bias_add. `a` and `b` hold exact halves (floordiv / floormod of
    negatives), `pos` is positive; divisors go through tf.where(b == 0, 1, b)."""
    a = keras.Input((4, 6), name="a")
    b = keras.Input((4, 6), name="b")
    row = keras.Input((1, 6), name="row")
    pos = keras.Input((4, 6), name="pos")
    nonzero = tf.where(tf.math.equal(b, 0.0), tf.ones_like(b), b)
    outs = [
        a + b, a - b, a * b, a / nonzero, a // nonzero, a % nonzero, pos ** b,
        a + 1.5, a - 2.0, a * 3.0, a / 4.0, a // 2.0, a % 1.5, pos ** 2.0, pos ** 0.5,
        1.5 + a, 2.0 - a, 3.0 * a, 1.0 / pos, 7.0 // nonzero, 5.0 % nonzero, 2.0 ** a,
        a + row, row - a, a * np.linspace(-1, 1, 6, dtype=np.float32),
        tf.math.add(a, b), tf.add(a, row), tf.math.subtract(a, b), tf.subtract(a, 1.0),
        tf.math.multiply(a, b), tf.multiply(a, 0.5), tf.math.divide(a, nonzero),
        tf.math.truediv(a, nonzero), tf.divide(a, 3.0), tf.math.floordiv(a, nonzero),
        tf.math.floormod(a, nonzero), tf.math.mod(a, 2.0), tf.math.pow(pos, a),
        tf.pow(pos, 3.0), tf.math.maximum(a, b), tf.maximum(a, 0.0), tf.math.minimum(a, row),
        tf.minimum(a, 1.0), tf.math.squared_difference(a, b), tf.math.divide_no_nan(a, b),
        tf.math.add_n([a, b, a * 0.5]), tf.nn.bias_add(a, [0.5, -1.0, 2.0, 0.0, 1.0, -0.5]),
    ]
    model = keras.Model([a, b, row, pos], outs, name="elementwise_binary")
    inputs = [halves((3, 4, 6)), halves((3, 4, 6)), halves((3, 1, 6)),
              RNG.uniform(0.25, 2.0, (3, 4, 6)).astype("float32")]
    return save_fixture(model, "elementwise_binary", inputs)


def comparisons_and_where():
    """Comparisons (operators and tf.math names, against tensors, scalars and a broadcast row)
    and logical ops (&, |, ~ and tf.math names; logical_xor is recorded as the and / or / not it
    is made of) feeding tf.where (condition, x, y; x / y tensors or scalars) and tf.cast to
    float32, and bool outputs. `a` and `b` hold exact halves, so equalities occur."""
    a = keras.Input((4, 6), name="a")
    b = keras.Input((4, 6), name="b")
    row = keras.Input((1, 6), name="row")
    pos = keras.Input((4, 6), name="pos")
    conditions = [a > b, a >= 0.5, a < row, a <= b, tf.math.greater(a, 0.0),
                  tf.math.greater_equal(a, b), tf.math.less(a, 1.0), tf.math.less_equal(a, row),
                  tf.math.equal(a, b), tf.math.not_equal(a, 0.0),
                  tf.math.logical_and(a > 0.0, b > 0.0), tf.math.logical_or(a > 1.0, b < -1.0),
                  tf.math.logical_not(a > b), (a > 0.0) & (b < 0.0), (a > 0.0) | (b > 0.0),
                  ~(a > b), tf.math.logical_xor(a > 0.0, b > 0.0)]
    outs = [tf.where(c, a, b) for c in conditions[:4]]
    outs += [tf.where(conditions[4], a, 0.0), tf.where(a > b, 1.0, -1.0),
             tf.where(a > 0.0, tf.math.sqrt(pos), -pos), tf.where(a < row, row, pos)]
    outs += [tf.cast(c, tf.float32) for c in conditions[4:]]
    outs += [a > b, tf.math.equal(a, row)]
    model = keras.Model([a, b, row, pos], outs, name="comparisons_and_where")
    inputs = [halves((3, 4, 6), -3, 3), halves((3, 4, 6), -3, 3), halves((3, 1, 6), -3, 3),
              RNG.uniform(0.25, 2.0, (3, 4, 6)).astype("float32")]
    return save_fixture(model, "comparisons_and_where", inputs)


def reductions():
    """tf.math reductions over one axis, axis lists, negative axes, keepdims; argmax / argmin
    (int64, and output_type int32), reduce_any / reduce_all on comparisons."""
    x = keras.Input((3, 4, 5), name="x")
    outs = [
        tf.math.reduce_mean(x, axis=[1, 2], keepdims=True),
        tf.reduce_mean(x, axis=-1),
        tf.math.reduce_sum(x, axis=1),
        tf.reduce_sum(x, axis=[1, 2, 3]),
        tf.math.reduce_max(x, axis=[1, 3], keepdims=True),
        tf.reduce_max(x, -2),
        tf.math.reduce_min(x, axis=2, keepdims=True),
        tf.reduce_min(x, axis=[-1, 1]),
        tf.math.reduce_prod(x, axis=1),
        tf.math.reduce_prod(x, axis=[2, 3], keepdims=True),
        tf.math.reduce_std(x, axis=[1, 2], keepdims=True),
        tf.math.reduce_std(x, axis=-1),
        tf.math.reduce_variance(x, axis=[1, 2, 3]),
        tf.math.reduce_variance(x, axis=2, keepdims=True),
        tf.math.reduce_logsumexp(x, axis=-1),
        tf.math.reduce_logsumexp(x, axis=[1, 2], keepdims=True),
        tf.math.argmax(x, axis=-1),
        tf.argmax(x, axis=1, output_type=tf.int32),
        tf.math.argmin(x, axis=2),
        tf.math.reduce_any(x > 1.5, axis=-1),
        tf.math.reduce_all(x > -1.0, axis=[1, 2], keepdims=True),
    ]
    model = keras.Model(x, outs, name="reductions")
    return save_fixture(model, "reductions")


def activations_and_normalize():
    """clip_by_value, the tf.nn activations with their options, l2_normalize (both spellings,
    axis / axis list / epsilon), softmax / log_softmax over the last and another axis."""
    x = keras.Input((4, 6), name="x")
    outs = [
        tf.clip_by_value(x, -0.5, 0.75), tf.clip_by_value(x, clip_value_min=0.0,
                                                           clip_value_max=6.0),
        tf.nn.relu(x), tf.nn.relu6(x * 4.0), tf.nn.elu(x), tf.nn.selu(x),
        tf.nn.leaky_relu(x), tf.nn.leaky_relu(x, alpha=0.1),
        tf.nn.gelu(x), tf.nn.gelu(x, approximate=True), tf.nn.gelu(x, approximate=False),
        tf.nn.softplus(x), tf.nn.softsign(x), tf.nn.swish(x), tf.nn.silu(x),
        tf.nn.silu(x, beta=1.5), tf.nn.sigmoid(x), tf.nn.tanh(x), tf.nn.crelu(x),
        tf.math.l2_normalize(x, axis=-1), tf.math.l2_normalize(x, axis=1, epsilon=1e-3),
        tf.nn.l2_normalize(x, axis=[1, 2]), tf.nn.l2_normalize(x * 1e-4, -1, epsilon=0.5),
        tf.nn.softmax(x), tf.nn.softmax(x, axis=1), tf.math.softmax(x, axis=-1),
        tf.nn.log_softmax(x), tf.nn.log_softmax(x, axis=1), tf.math.log_softmax(x, -2),
    ]
    model = keras.Model(x, outs, name="activations_and_normalize")
    return save_fixture(model, "activations_and_normalize",
                        [normal((3, 4, 6), scale=2.0)])


def matmul():
    """tf.matmul (batched rank 3 and 4, transpose_a / transpose_b, a constant right operand),
    the @ operator, tf.linalg.matmul; all three are recorded as "linalg.matmul". (tf.einsum
    cannot be saved loadably: einsum_operands_lost.)"""
    a = keras.Input((3, 4), name="a")
    b = keras.Input((4, 5), name="b")
    q = keras.Input((2, 3, 4), name="q")
    k = keras.Input((2, 5, 4), name="k")
    w = RNG.normal(0, 0.5, (4, 6)).astype("float32")
    outs = [
        tf.matmul(a, b),
        tf.matmul(a, a, transpose_b=True),
        tf.matmul(a, a, transpose_a=True),
        tf.matmul(b, a, transpose_a=True, transpose_b=True),
        tf.matmul(q, k, transpose_b=True),
        tf.matmul(a, w),
        a @ b,
        tf.linalg.matmul(a, b),
        tf.linalg.matmul(q, k, transpose_b=True),
        tf.linalg.matmul(a, b, adjoint_a=False, adjoint_b=False),
    ]
    model = keras.Model([a, b, q, k], outs, name="matmul")
    return save_fixture(model, "matmul")


def einsum_operands_lost():
    """tf.einsum on Keras tensors: tf-keras records the call (function "einsum") but saves only
    the equation, as a constant first argument (["_CONSTANT_VALUE", -1, "bij,bjk->bik", {}]),
    and drops the operands (einsum's *inputs): tf-keras itself cannot load the file back ("Got 0
    inputs for equation"). A real tf-keras file, kept so that kerasgl can refuse it clearly; its
    outputs are the live model's, before saving. The script asserts that tf-keras' reload fails."""
    a = keras.Input((3, 4), name="a")
    b = keras.Input((4, 5), name="b")
    y = tf.einsum("bij,bjk->bik", a, b)
    model = keras.Model([a, b], y, name="einsum_operands_lost")
    return save_fixture(model, "einsum_operands_lost", reloads=False)


def cast_onehot_shape():
    """tf.cast float32 <-> int32 (truncation toward zero) and to / from bool; tf.one_hot (depth,
    on / off values, axis; indices out of range and -1 give off everywhere; indices from
    argmax); tf.shape-derived constants: tf.shape(x)[1] in a reshape, the batch size, a slice
    bound, tf.range(tf.shape(x)[1]) added to x; zeros_like / ones_like."""
    x = keras.Input((4, 6), name="x")
    ids = keras.Input((5,), name="ids", dtype="int32")
    n = tf.shape(x)[1]
    outs = [
        tf.cast(x, tf.int32),
        tf.cast(x, "int32") * 2,
        tf.cast(tf.cast(x, tf.int32), tf.float32),
        tf.cast(x, tf.bool),
        tf.cast(tf.cast(x, tf.bool), tf.float32),
        tf.cast(ids, tf.float32) * 0.5,
        tf.one_hot(ids, 4),
        tf.one_hot(ids, depth=4, on_value=2.0, off_value=-1.0, axis=1),
        tf.one_hot(ids, 3, axis=0 + 1, on_value=1.0, off_value=0.0, dtype=tf.float32),
        tf.one_hot(tf.math.argmax(x, axis=-1), 6),
        tf.reshape(x, [-1, n * 6]),
        tf.reshape(x, [tf.shape(x)[0], -1, 3]),
        tf.reshape(x, tf.stack([tf.shape(x)[0], 2, 12])),
        x[:, : n // 2],
        x + tf.cast(tf.range(n), tf.float32)[:, tf.newaxis],
        x + tf.cast(tf.range(0, tf.shape(x)[2], 1), tf.float32),
        tf.cast(tf.range(tf.shape(ids)[1]), tf.float32) * tf.cast(ids, tf.float32),
        tf.zeros_like(x) + 1.0,
        tf.ones_like(x) * x,
        tf.cast(tf.shape(x), tf.float32)[tf.newaxis, :] * tf.reduce_mean(x, axis=[1, 2])[:, None],
    ]
    model = keras.Model([x, ids], outs, name="cast_onehot_shape")
    inputs = [halves((3, 4, 6)) * 1.3, RNG.integers(-1, 5, (3, 5)).astype("int32")]
    return save_fixture(model, "cast_onehot_shape", inputs)


def compat_v1_spellings():
    """The tf.compat.v1 spellings that TF 1.x-style code leaves in files: transpose,
    depth_to_space / space_to_depth, image.resize_bilinear / resize_nearest_neighbor /
    resize_bicubic (align_corners, half_pixel_centers, neither: TF1's asymmetric mapping),
    image.resize (v1, align_corners), reduce_mean / reduce_sum with keep_dims, squeeze with
    squeeze_dims, nn.softmax with dim, concat, gather, expand_dims with dim."""
    x = keras.Input((4, 6, 8), name="x")
    v1 = tf.compat.v1
    outs = [
        v1.transpose(x, [0, 2, 1, 3]),
        v1.transpose(x, perm=[0, 3, 1, 2]),
        v1.depth_to_space(x, 2),
        v1.nn.depth_to_space(x, 2),
        v1.space_to_depth(x, 2),
        v1.image.resize_bilinear(x, (7, 11)),
        v1.image.resize_bilinear(x, (7, 11), align_corners=True),
        v1.image.resize_bilinear(x, [8, 12], half_pixel_centers=True),
        v1.image.resize_nearest_neighbor(x, (7, 11)),
        v1.image.resize_nearest_neighbor(x, (7, 11), align_corners=True),
        v1.image.resize_nearest_neighbor(x, [8, 12], half_pixel_centers=True),
        v1.image.resize_bicubic(x, (7, 11)),
        v1.image.resize_bicubic(x, (7, 11), align_corners=True),
        v1.image.resize_bicubic(x, (7, 11), half_pixel_centers=True),
        v1.image.resize_area(x, (3, 4)),
        v1.image.resize(x, (7, 11), align_corners=True),
        v1.image.resize(x, (7, 11), method=v1.image.ResizeMethod.NEAREST_NEIGHBOR),
        v1.image.resize_images(x, (3, 5)),
        v1.reduce_mean(x, axis=[1, 2], keep_dims=True),
        v1.reduce_sum(x, reduction_indices=-1),
        v1.squeeze(v1.expand_dims(x, dim=1), squeeze_dims=[1]),
        v1.nn.softmax(x, dim=2),
        v1.concat([x, x], axis=-1),
        v1.gather(x, [1, 0], axis=1),
    ]
    model = keras.Model(x, outs, name="compat_v1_spellings")
    return save_fixture(model, "compat_v1_spellings")


def tf_op_layer_graph_mode():
    """TensorFlowOpLayer (the TF 2.0 - 2.3 form): built with eager execution disabled, where
    tf-keras wraps raw graph ops on Keras tensors in TensorFlowOpLayer layers, each config holding
    the op's NodeDef (op, attrs; `input` names the graph tensors) and `constants` ({input index:
    value}) for its non-Keras inputs. Runs in a subprocess (see main)."""
    assert not tf.executing_eagerly()
    x = keras.Input((4, 6, 8), name="x")
    c = layers.Conv2D(8, 1, name="conv")(x)
    y = tf.nn.depth_to_space(c, 2)                                     # DepthToSpace
    y = tf.nn.relu(y) * 2.0 + 1.0                                      # Relu, Mul, AddV2
    y = tf.image.resize(y, (6, 9))                                     # ResizeBilinear
    y = tf.transpose(y, [0, 2, 1, 3])                                  # Transpose
    z = tf.concat([y, -y], axis=-1)                                    # Neg, ConcatV2
    z = tf.reshape(z, [-1, 9 * 6 * 4])                                 # Reshape
    m = tf.reduce_mean(c, axis=[1, 2])                                 # Mean
    s = tf.nn.softmax(m)                                               # Softmax
    p = tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")    # MirrorPad
    q = x[:, 1:3, ::2]                                                 # StridedSlice
    r = tf.math.sqrt(tf.math.abs(x) + 1e-3) - tf.math.maximum(x, 0.0)  # Abs, Sqrt, Maximum, Sub
    e = tf.einsum("bhwc,bhvc->bhwv", x, c)                             # Einsum (2 graph inputs)
    model = keras.Model(x, [z, s, p, q, r, e], name="tf_op_layer_graph_mode")
    randomize_all(model)
    return save_fixture(model, "tf_op_layer_graph_mode")


FIXTURES = (depth_space, subpixel_upsamplers, image_resize_up, image_resize_down, layout_ops,
            pad_and_gather, slicing, elementwise_unary, elementwise_binary, comparisons_and_where,
            reductions, activations_and_normalize, matmul, einsum_operands_lost,
            cast_onehot_shape, compat_v1_spellings, tf_op_layer_graph_mode)
GRAPH_MODE = {"tf_op_layer_graph_mode"}


def seed_for(name: str) -> None:
    """Seeded per fixture, so writing one fixture alone reproduces it exactly."""
    global RNG
    seed = zlib.crc32(name.encode())
    RNG = np.random.default_rng(seed)
    keras.backend.clear_session()          # layer names (tf.math.add_3, ...) restart per fixture
    keras.utils.set_random_seed(seed % 2**31)


def run_graph_mode(name: str) -> dict:
    """Build one fixture in a subprocess with eager execution disabled; return its entry."""
    result = subprocess.run([sys.executable, os.path.abspath(__file__), GRAPH_MODE_FLAG, name],
                            check=True, capture_output=True, text=True)
    entry = json.loads(result.stdout.strip().splitlines()[-1])
    # A TF 2.4+ reader sees TF 2.0 - 2.3 files in eager mode: the file must load there too.
    data = np.load(os.path.join(OUT, f"{name}.npz"))
    inputs = [data[f"input_{i}"] for i in range(sum(k.startswith("input_") for k in data))]
    outputs = [data[f"output_{i}"] for i in range(sum(k.startswith("output_") for k in data))]
    check_reload(os.path.join(OUT, f"{name}.h5"), inputs, outputs)
    assert entry["tensorflow_op_layer_ops"], entry
    return entry


def main(argv: list[str]) -> int:
    """Write every fixture, or only those named on the command line."""
    os.makedirs(OUT, exist_ok=True)
    if argv[:1] == [GRAPH_MODE_FLAG]:
        tf.compat.v1.disable_eager_execution()
        (make,) = [f for f in FIXTURES if f.__name__ == argv[1]]
        seed_for(make.__name__)
        print(json.dumps(make()))
        return 0
    unknown = set(argv) - {f.__name__ for f in FIXTURES}
    if unknown:
        raise SystemExit(f"unknown fixtures: {sorted(unknown)}")
    manifest = {"fixtures": {}, "slicing_op_lambda": {}, "tensorflow_op_layer_ops": {},
                "unloadable_in_tf_keras": []}
    if argv and os.path.exists(MANIFEST):
        with open(MANIFEST) as f:
            manifest = json.load(f)
    elif not argv:             # a full run starts from an empty folder: no stale fixtures stay
        for stale in os.listdir(OUT):
            if stale.endswith((".h5", ".npz")) or stale == "MANIFEST.json":
                os.remove(os.path.join(OUT, stale))
    for make in FIXTURES:
        name = make.__name__
        if argv and name not in argv:
            continue
        if name in GRAPH_MODE:
            entry = run_graph_mode(name)
        else:
            seed_for(name)
            entry = make()
        for key in ("slicing_op_lambda", "tensorflow_op_layer_ops"):
            manifest[key].pop(name, None)
            if entry[key]:
                manifest[key][name] = entry[key]
        manifest["fixtures"][name] = entry["functions"]
        unloadable = set(manifest.setdefault("unloadable_in_tf_keras", [])) - {name}
        if not entry["reloads_in_tf_keras"]:
            unloadable.add(name)
        manifest["unloadable_in_tf_keras"] = sorted(unloadable)
        print(f"wrote {name}: {', '.join(entry['functions'] or entry['tensorflow_op_layer_ops'])}")
    manifest["tensorflow"] = tf.__version__
    manifest["tf_keras"] = keras.__version__
    manifest["fixtures"] = dict(sorted(manifest["fixtures"].items()))
    every = sorted({f for names in manifest["fixtures"].values() for f in names})
    manifest["all_functions"] = every
    with open(MANIFEST, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"{len(every)} functions; tests/data/tf_ops: {total / 1024:.0f} KiB, "
          f"tf {tf.__version__}, tf_keras {keras.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
