"""Config values a file should not hold, against Keras: where Keras refuses the file, kerasgl gives
a load error naming the file and the layer (ModelFileError for a value of the wrong type or
range, a missing key, a call that passes tensors the layer does not take); where Keras runs it,
kerasgl runs it too and its predict matches Keras's (a refusal there fails).
What Keras refuses, kerasgl refuses (dilation_rate / pool_size / strides of 0, time_major in a
Keras 3 file, a negative ReLU max_value). Hypothesis generates the values for Dense, Conv2D,
pooling, MultiHeadAttention, LayerNormalization and LSTM; the tables below pin the messages."""
import contextlib
import json
import math
import os
import tempfile
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from keras_ref import keras

import kerasgl as kg

L = keras.layers
# The kerasgl errors a config that does not fit may give at load: a damaged file, a layer (option)
# kerasgl does not run, a well-formed config that does not fit its input (a 5x5 kernel on 4x4).
LOAD_ERRORS = (kg.ModelFileError, kg.UnsupportedLayerError, kg.ShapeError)


# -------------------------------------------------------------------------------------------------
# Editing a saved model's config
# -------------------------------------------------------------------------------------------------
def _layer_config(config: dict, layer_name: str) -> dict:
    for layer in config["config"]["layers"]:
        if layer["config"].get("name") == layer_name or layer.get("name") == layer_name:
            return layer
    raise KeyError(layer_name)


def edited_copy(src: str, dst: str, layer_name: str, edit) -> str:
    """A copy of the .keras file `src` whose layer `layer_name` went through edit(layer_entry)
    (its dict in config.json: "config", "inbound_nodes", ...)."""
    with zipfile.ZipFile(src) as z:
        members = {name: z.read(name) for name in z.namelist()}
    config = json.loads(members["config.json"])
    edit(_layer_config(config, layer_name))
    members["config.json"] = json.dumps(config).encode("utf-8")
    with zipfile.ZipFile(dst, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return dst


def set_key(key, value):
    def edit(entry):
        if value is DELETE:
            entry["config"].pop(key, None)
        else:
            entry["config"][key] = value
    return edit


DELETE = object()


def keras_outcome(path, x):
    """Keras's predict on the file, or None when Keras refuses to load or to run it."""
    try:
        with contextlib.redirect_stderr(open(os.devnull, "w")):
            model = keras.saving.load_model(path)
            return [np.asarray(o) for o in _as_list(model.predict(x, verbose=0))]
    except Exception:           # noqa: BLE001 - any refusal counts as one
        return None


def kerasgl_outcome(path, x):
    """kerasgl's predict, or the load error it raised (anything else fails the test)."""
    try:
        with kg.load_model(path) as model:
            return [np.asarray(o) for o in _as_list(model.predict(x, verbose=0))]
    except LOAD_ERRORS as exc:
        return exc


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def assert_refused_or_matches(path, x, layer_name, key=None):
    """The property: a kerasgl load error naming file and layer (required where Keras refuses),
    or outputs equal to Keras's."""
    ours, theirs = kerasgl_outcome(path, x), keras_outcome(path, x)
    if isinstance(ours, Exception):
        message = str(ours)
        assert os.path.basename(path) in message and f"'{layer_name}'" in message, message
        if key is not None and isinstance(ours, kg.ModelFileError) and "config value" in message:
            assert repr(key) in message, message
        # A refusal is right only where Keras refuses too: a file Keras runs, kerasgl must run
        # (a kerasgl that refused everything would otherwise pass).
        assert theirs is None, f"Keras runs {os.path.basename(path)} ({key}), kerasgl refused: " \
                               f"{message}"
        return ours
    assert theirs is not None, f"kerasgl loaded and ran {path}, which Keras refuses"
    assert len(ours) == len(theirs)
    for a, e in zip(ours, theirs):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4, equal_nan=True)
    return None


# -------------------------------------------------------------------------------------------------
# The base models (saved once per module)
# -------------------------------------------------------------------------------------------------
RNG = np.random.default_rng(3)
BASES = {
    "dense": (lambda: keras.Sequential([keras.Input((4,)), L.Dense(3, name="layer")]), (2, 4)),
    "conv": (lambda: keras.Sequential([keras.Input((6, 6, 4)), L.Conv2D(4, 3, name="layer")]),
             (2, 6, 6, 4)),
    "pool": (lambda: keras.Sequential([keras.Input((6, 6, 3)), L.MaxPooling2D(2, name="layer")]),
             (2, 6, 6, 3)),
    "avgpool": (lambda: keras.Sequential([keras.Input((6, 6, 3)),
                                          L.AveragePooling2D(2, name="layer")]), (2, 6, 6, 3)),
    "mha": (lambda: _self_attention(), (2, 3, 4)),
    "layernorm": (lambda: keras.Sequential([keras.Input((3, 4)),
                                            L.LayerNormalization(name="layer")]), (2, 3, 4)),
    "lstm": (lambda: keras.Sequential([keras.Input((3, 4)), L.LSTM(4, name="layer")]), (2, 3, 4)),
}


def _self_attention():
    x = keras.Input((3, 4))
    return keras.Model(x, L.MultiHeadAttention(2, 2, name="layer")(x, x), name="self_attention")


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bases")
    saved = {}
    for name, (make, shape) in BASES.items():
        path = str(folder / f"{name}.keras")
        make().save(path)
        saved[name] = (path, RNG.uniform(-1, 1, shape).astype(np.float32))
    return saved


def run_edit(bases, base, edit, tag="edited", key=None):
    src, x = bases[base]
    with tempfile.TemporaryDirectory() as folder:
        path = edited_copy(src, os.path.join(folder, f"{base}_{tag}.keras"), "layer", edit)
        return assert_refused_or_matches(path, x, "layer", key)


# -------------------------------------------------------------------------------------------------
# Hypothesis: odd values for the keys each layer reads
# -------------------------------------------------------------------------------------------------
ODD_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 7), st.sampled_from([2.5, 3.0, -1.0, 0.0, 1e9]),
    st.sampled_from([math.nan, math.inf, -math.inf]), st.sampled_from(["abc", "", "same", "2"]),
    st.just({}), st.just({"class_name": "X"}))
ODD_VALUES = st.one_of(ODD_SCALARS, st.lists(ODD_SCALARS, max_size=3),
                       st.lists(st.integers(-1, 4), min_size=1, max_size=3), st.just(DELETE))
KEYS = {
    "dense": ["units", "use_bias", "activation"],
    "conv": ["filters", "kernel_size", "strides", "dilation_rate", "padding", "groups",
             "activation", "use_bias"],
    "pool": ["pool_size", "strides", "padding"],
    "avgpool": ["pool_size", "strides", "padding"],
    "mha": ["num_heads", "key_dim", "value_dim", "use_bias"],
    "layernorm": ["axis", "epsilon", "center", "scale"],
    "lstm": ["units", "activation", "recurrent_activation", "use_bias", "return_sequences",
             "go_backwards", "time_major"],
}
PROPERTY = settings(max_examples=14, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@pytest.mark.parametrize("base", sorted(KEYS))
def test_odd_config_values_are_refused_or_match_keras(base, bases):
    @PROPERTY
    @given(key=st.sampled_from(KEYS[base]), value=ODD_VALUES)
    def check(key, value):
        run_edit(bases, base, set_key(key, value), key=key)
    check()


# -------------------------------------------------------------------------------------------------
# What Keras refuses, kerasgl refuses, with a message naming file, layer, key and value
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("base,key,value,expected", [
    ("dense", "units", None, "a positive integer"),
    ("dense", "units", "abc", "a positive integer"),
    ("dense", "units", math.nan, "a positive integer"),
    ("dense", "units", [3], "a positive integer"),
    ("dense", "units", {"value": 3}, "a positive integer"),
    ("dense", "units", 3.0, "a positive integer"),
    ("dense", "units", -5, "a positive integer"),
    ("conv", "kernel_size", [0, 3], "an integer >= 1 or a list of 2"),
    ("conv", "kernel_size", math.inf, "an integer >= 1 or a list of 2"),
    ("conv", "strides", 0, "an integer >= 1"),
    ("conv", "dilation_rate", 0, "an integer >= 1"),
    ("conv", "dilation_rate", -1, "an integer >= 1"),
    ("conv", "padding", "bogus", "one of 'valid', 'same'"),
    ("conv", "filters", 0, "a positive integer"),
    ("conv", "activation", 3, "an activation name"),
    ("pool", "pool_size", 0, "an integer >= 1"),
    ("pool", "pool_size", -2, "an integer >= 1"),
    ("pool", "strides", 0, "an integer >= 1"),
    ("pool", "padding", None, "one of 'valid', 'same'"),
    ("mha", "num_heads", 0, "a positive integer"),
    ("mha", "key_dim", "2", "a positive integer"),
    ("layernorm", "epsilon", "abc", "a number"),
    ("layernorm", "axis", [], "an integer axis or a list of different ones"),
    ("layernorm", "axis", 1.5, "an integer axis or a list of different ones"),
    ("layernorm", "axis", [-1, -1], "an integer axis or a list of different ones"),
    ("lstm", "units", -5, "a positive integer"),
])
def test_refused_config_values_name_file_layer_key_and_value(base, key, value, expected, bases):
    src, x = bases[base]
    assert keras_outcome(edited_copy(src, src + ".k.keras", "layer", set_key(key, value)), x) \
        is None, "Keras takes this value: the case would not be a refusal"
    path = edited_copy(src, src + ".edited.keras", "layer", set_key(key, value))
    with pytest.raises(kg.ModelFileError) as info:
        kg.load_model(path)
    message = str(info.value)
    for part in (os.path.basename(path), "Layer 'layer'", repr(key), repr(value)[:40], expected):
        assert part in message, (part, message)


def test_time_major_in_a_keras3_file_is_refused(bases):
    src, x = bases["lstm"]
    path = edited_copy(src, src + ".time_major.keras", "layer", set_key("time_major", False))
    assert keras_outcome(path, x) is None
    with pytest.raises(kg.ModelFileError, match=r"lstm\.keras\.time_major\.keras: Layer 'layer' "
                                                r"\(LSTM\): config value 'time_major'"):
        kg.load_model(path)


@pytest.mark.parametrize("key,value", [("max_value", -1.0), ("negative_slope", -0.5),
                                       ("threshold", -1.0), ("negative_slope", None),
                                       ("threshold", "x")])
def test_relu_options_keras_refuses(key, value, tmp_path):
    src = str(tmp_path / "relu.keras")
    keras.Sequential([keras.Input((3,)), L.ReLU(name="layer")]).save(src)
    path = edited_copy(src, str(tmp_path / "relu_edited.keras"), "layer", set_key(key, value))
    assert keras_outcome(path, np.ones((1, 3), np.float32)) is None
    with pytest.raises(kg.ModelFileError, match=rf"relu_edited\.keras: Layer 'layer' \(ReLU\): "
                                                rf"config value '{key}'"):
        kg.load_model(path)


@pytest.mark.parametrize("base,key", [("dense", "units"), ("conv", "kernel_size"),
                                      ("conv", "filters"), ("mha", "num_heads"),
                                      ("lstm", "units")])
def test_missing_required_keys(base, key, bases):
    src, x = bases[base]
    path = edited_copy(src, src + f".no_{key}.keras", "layer", set_key(key, DELETE))
    assert keras_outcome(path, x) is None
    with pytest.raises(kg.ModelFileError, match=rf"Layer 'layer' \(\w+\): its config has no "
                                                rf"'{key}'"):
        kg.load_model(path)


def test_missing_optional_keys_take_keras_defaults(bases):
    for base, key in [("conv", "strides"), ("conv", "padding"), ("pool", "strides"),
                      ("layernorm", "epsilon"), ("dense", "use_bias")]:
        assert run_edit(bases, base, set_key(key, DELETE), f"no_{key}") is None, (base, key)


# -------------------------------------------------------------------------------------------------
# Call arguments added or removed
# -------------------------------------------------------------------------------------------------
def test_a_call_with_a_tensor_argument_too_many_is_refused(tmp_path):
    src = str(tmp_path / "two.keras")
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    keras.Model([a, b], [L.Dense(3, name="layer")(a), L.Add(name="add")([a, b])]).save(src)

    def extra_argument(entry):
        node = entry["inbound_nodes"][0]
        node["args"].append(node["args"][0])         # dense(a, a)
    path = edited_copy(src, str(tmp_path / "extra_arg.keras"), "layer", extra_argument)
    x = [np.ones((1, 4), np.float32)] * 2
    assert keras_outcome(path, x) is None
    with pytest.raises(kg.ModelFileError, match=r"extra_arg\.keras: Layer 'layer' \(Dense\): its "
                                                r"call #0 passes 2 tensor argument"):
        kg.load_model(path)


def test_a_call_without_its_tensor_argument_is_refused(tmp_path):
    src = str(tmp_path / "one.keras")
    a = keras.Input((4,), name="a")
    keras.Model(a, L.Dense(3, name="layer")(a)).save(src)

    def no_argument(entry):
        entry["inbound_nodes"][0]["args"] = []
    path = edited_copy(src, str(tmp_path / "no_arg.keras"), "layer", no_argument)
    assert keras_outcome(path, np.ones((1, 4), np.float32)) is None
    with pytest.raises(LOAD_ERRORS, match=r"no_arg\.keras.*'layer'"):
        kg.load_model(path)


# -------------------------------------------------------------------------------------------------
# Every load error names the file and the layer
# -------------------------------------------------------------------------------------------------
def _lstm_with_bigger_units(entry):
    entry["config"]["units"] = 8              # the weights are for 4 units


def _embedding_of_other_rows(entry):
    entry["config"]["input_dim"] = 7          # the table has 10 rows


@pytest.mark.parametrize("make,edit,layer_class", [
    (lambda: keras.Sequential([keras.Input((3, 4)), L.LSTM(4, name="broken")]),
     _lstm_with_bigger_units, "LSTM"),
    (lambda: keras.Sequential([keras.Input((3, 4)), L.LSTM(4, name="broken")]),
     set_key("units", -5), "LSTM"),
    (lambda: keras.Sequential([keras.Input((4,)), L.Dense(3, name="broken")]),
     set_key("units", 4), "Dense"),
    (lambda: keras.Sequential([keras.Input((6, 6, 3)), L.Conv2D(4, 3, name="broken")]),
     set_key("kernel_size", [2, 2]), "Conv2D"),
    (lambda: keras.Sequential([keras.Input((3,), dtype="int32"),
                               L.Embedding(10, 2, name="broken")]), _embedding_of_other_rows,
     "Embedding"),
    (lambda: keras.Sequential([keras.Input((3, 4)), L.BatchNormalization(name="broken")]),
     set_key("axis", 5), "BatchNormalization"),
    (lambda: keras.Sequential([keras.Input((3, 4)), L.LayerNormalization(name="broken")]),
     set_key("epsilon", [1e-3]), "LayerNormalization"),
    (lambda: _self_attention_named("broken"), set_key("key_dim", 3), "MultiHeadAttention"),
], ids=["lstm_units_vs_weights", "lstm_units_negative", "dense_units_vs_kernel",
        "conv_kernel_size_vs_kernel", "embedding_rows", "batchnorm_axis", "layernorm_epsilon",
        "mha_key_dim_vs_weights"])
def test_every_load_error_names_the_file_and_the_layer(make, edit, layer_class, tmp_path):
    src = str(tmp_path / "good.keras")
    make().save(src)
    path = edited_copy(src, str(tmp_path / f"broken_{layer_class.lower()}.keras"), "broken", edit)
    with pytest.raises(LOAD_ERRORS) as info:
        kg.load_model(path)
    message = str(info.value)
    assert path in message and "'broken'" in message and layer_class in message, message


def _self_attention_named(name):
    x = keras.Input((3, 4))
    return keras.Model(x, L.MultiHeadAttention(2, 2, name=name)(x, x))

