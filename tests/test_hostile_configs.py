"""Property-based: any JSON value in a layer's config option gives a kerasgl error or a working
model, never a raw Python exception, a hang or a wrong shape.

A Keras 3 .keras file (Dense and Conv2D layers, real weights) is rewritten with hypothesis's
value in one option (units, kernel_size, strides, ...) and loaded and run by kerasgl:
- test_saving_never_lets_a_raw_exception_out: kerasgl.saving (read_model) answers every value
  with a ModelFileError or a ModelSpec;
- test_config_values_give_kerasgl_errors_or_a_working_model: the whole load_model + predict; a
  raw exception from any module fails the case at once, naming the module.
"""
from __future__ import annotations

import io
import json
import os
import traceback
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kerasgl as kg
from kerasgl.errors import KerasGLError, ModelFileError
from kerasgl.saving import read_model

OPTIONS = {
    "Dense": ["units", "activation", "use_bias", "dtype", "name", "trainable",
              "kernel_initializer"],
    "Conv2D": ["filters", "kernel_size", "strides", "padding", "dilation_rate", "groups",
               "data_format", "activation", "use_bias"],
}
SETTINGS = dict(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

leaves = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
          | st.integers(-3, 12) | st.floats(allow_nan=True, allow_infinity=True)
          | st.sampled_from(["same", "valid", "causal", "relu", "channels_first", "", "3",
                             "float16", "int8", "no_such_thing"])
          | st.text(max_size=8))
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                           max_leaves=10)
shape_like = st.lists(st.integers(-2, 2 ** 40), min_size=0, max_size=4)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    import keras
    L = keras.layers
    model = keras.Sequential([keras.Input((6, 6, 2)), L.Conv2D(3, 3, name="conv"),
                              L.Flatten(name="flat"), L.Dense(4, name="dense")], name="hyp")
    rng = np.random.default_rng(0)
    for var in model.weights:
        var.assign(rng.uniform(-1, 1, var.shape).astype("float32"))
    path = str(tmp_path_factory.mktemp("hostile_configs") / "base.keras")
    model.save(path)
    with zipfile.ZipFile(path) as z:
        members = {name: z.read(name) for name in z.namelist()}
    x = rng.normal(size=(2, 6, 6, 2)).astype("float32")
    return {"members": members, "config": json.loads(members["config.json"]), "x": x,
            "dir": os.path.dirname(path)}


def with_option(base, class_name: str, option: str, value) -> str:
    config = json.loads(json.dumps(base["config"]))
    entry = next(e for e in config["config"]["layers"] if e["class_name"] == class_name)
    entry["config"][option] = value
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in base["members"].items():
            z.writestr(name, json.dumps(config, allow_nan=True) if name == "config.json"
                       else data)
    path = os.path.join(base["dir"], "case.keras")
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return path


def origin(exc: BaseException) -> str:
    frames = [f.filename for f in traceback.extract_tb(exc.__traceback__)
              if "/kerasgl/" in f.filename.replace(os.sep, "/")]
    return frames[-1].replace(os.sep, "/").split("/kerasgl/")[-1] if frames else "?"


cases = st.one_of(*(st.tuples(st.just(c), st.sampled_from(opts), json_values | shape_like)
                    for c, opts in OPTIONS.items()))


@settings(**SETTINGS)
@given(case=cases)
def test_saving_never_lets_a_raw_exception_out(base, case):
    class_name, option, value = case
    path = with_option(base, class_name, option, value)
    try:
        read_model(path)
    except ModelFileError as exc:
        assert path in str(exc)


@settings(**SETTINGS)
@given(case=cases)
def test_config_values_give_kerasgl_errors_or_a_working_model(base, case):
    """Each case stands alone: a raw exception anywhere (saving/ or the layer code) fails this
    case, whatever runs before or after it (run alone, with -k, or in any order)."""
    class_name, option, value = case
    path = with_option(base, class_name, option, value)
    try:
        with kg.load_model(path) as model:
            out = np.asarray(model.predict(base["x"], verbose=0))
        assert out.ndim == 2 and out.shape[0] == 2, f"{class_name}.{option}={value!r}: {out.shape}"
    except KerasGLError as exc:
        if isinstance(exc, ModelFileError):
            assert path in str(exc)
    except Exception as exc:   # noqa: BLE001 (a raw exception: the failure this test looks for)
        pytest.fail(f"{class_name}.{option}={value!r:.60}: raised {type(exc).__name__} in "
                    f"kerasgl/{origin(exc)}: {exc}")
