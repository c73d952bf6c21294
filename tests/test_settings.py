"""kerasgl/settings.py: every KERASGL_* variable read one way (the spellings each takes, the error
for one it does not), overrides and their scope, and the modules that read settings through it
(plans, fusion, leak tracking, tuning and autotune, the EGL device, `kerasgl info`)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from keras_ref import assert_close, keras

import kerasgl as kg
from kerasgl import autotune, settings
from kerasgl.compiler import fusion
from kerasgl.errors import KerasGLError, SettingError
from kerasgl.runtime import context, tuning

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOLEANS = [key for key, s in settings.SETTINGS.items() if s.kind == "bool"]
SPELLINGS = {True: ["1", "true", "TRUE", "True", "on", "ON", " yes ", "Yes\n"],
             False: ["0", "false", "False", "off", "OFF", "no", " No ", "\tFALSE"]}


def env_name(key):
    return settings.SETTINGS[key].name


# -------------------------------------------------------------------------------------------------
# Reading the environment
# -------------------------------------------------------------------------------------------------
def test_every_variable_is_declared_once_with_a_meaning():
    names = [s.name for s in settings.SETTINGS.values()]
    assert len(names) == len(set(names))
    for key, setting in settings.SETTINGS.items():
        assert setting.name == "KERASGL_" + key.upper()
        assert setting.kind in ("bool", "int", "choice", "text")
        assert setting.meaning and "\n" not in setting.meaning
        assert setting.parse(None) == setting.default == setting.parse("  ")


@pytest.mark.parametrize("key", BOOLEANS)
def test_booleans_take_every_spelling(key, monkeypatch):
    for expected, spellings in SPELLINGS.items():
        for text in spellings:
            monkeypatch.setenv(env_name(key), text)
            assert settings.from_environment(key) is expected, (key, text)
    for blank in ("", "   "):
        monkeypatch.setenv(env_name(key), blank)
        assert settings.from_environment(key) is settings.SETTINGS[key].default
    monkeypatch.delenv(env_name(key))
    assert settings.from_environment(key) is settings.SETTINGS[key].default


@pytest.mark.parametrize("key", BOOLEANS)
@pytest.mark.parametrize("text", ["2", "of", "enabled", "nope", "t"])
def test_an_unknown_value_names_the_variable_the_value_and_the_choices(key, text, monkeypatch):
    monkeypatch.setenv(env_name(key), text)
    with pytest.raises(SettingError) as caught:
        settings.from_environment(key)
    message = str(caught.value)
    assert env_name(key) in message and repr(text) in message
    assert "1/0, true/false, on/off, yes/no" in message
    assert isinstance(caught.value, KerasGLError) and isinstance(caught.value, ValueError)


def test_the_integer_setting(monkeypatch):
    for text, value in (("0", 0), (" 3 ", 3), ("12", 12)):
        monkeypatch.setenv("KERASGL_EGL_DEVICE", text)
        assert settings.get("egl_device") == value
    for text in ("first", "-1", "1.5", "0x1"):
        monkeypatch.setenv("KERASGL_EGL_DEVICE", text)
        with pytest.raises(SettingError, match=re.escape(f"KERASGL_EGL_DEVICE must be an integer "
                                                         f">= 0, got {text!r}")):
            settings.get("egl_device")


def test_the_choice_settings(monkeypatch):
    for text, value in (("auto", "auto"), ("AUTO", "auto"), ("on", "on"), ("1", "on"),
                        ("Yes", "on"), ("true", "on"), ("off", "off"), ("0", "off"), ("no", "off"),
                        ("", "auto")):
        monkeypatch.setenv("KERASGL_COMPILE_AHEAD", text)
        assert settings.get("compile_ahead") == value, text
    monkeypatch.setenv("KERASGL_COMPILE_AHEAD", "sometimes")
    with pytest.raises(SettingError, match="KERASGL_COMPILE_AHEAD must be one of auto/on/off.*"
                                           "got 'sometimes'"):
        settings.get("compile_ahead")
    for key, setting in settings.SETTINGS.items():
        if setting.kind == "choice":
            for choice in setting.choices:
                monkeypatch.setenv(setting.name, choice.upper())
                assert settings.get(key) == choice
            monkeypatch.setenv(setting.name, "bogus")
            with pytest.raises(SettingError, match=f"{setting.name}.*'bogus'"):
                settings.get(key)


def test_the_text_setting_takes_any_text(monkeypatch):
    monkeypatch.setenv("KERASGL_TUNING", "  conv_pix=8, anything at all ")
    assert settings.get("tuning") == "conv_pix=8, anything at all"
    monkeypatch.delenv("KERASGL_TUNING")
    assert settings.get("tuning") == ""


def test_a_changed_variable_is_seen_at_the_next_read(monkeypatch):
    """Values are cached by the variable's text, never across a change of it."""
    monkeypatch.setenv("KERASGL_PLANS", "1")
    assert settings.get("plans") is True
    os.environ["KERASGL_PLANS"] = "off"         # as any code (or monkeypatch) would change it
    assert settings.get("plans") is False
    del os.environ["KERASGL_PLANS"]
    assert settings.get("plans") is True
    monkeypatch.setenv("KERASGL_PLANS", "maybe")
    for _ in range(2):                          # a bad value is never cached as good
        with pytest.raises(SettingError):
            settings.get("plans")


def test_an_unknown_setting_is_refused():
    with pytest.raises(SettingError, match="no setting 'plan'.*plans, fusion"):
        settings.get("plan")
    with pytest.raises(SettingError, match="no setting 'plan'"):
        with settings.override(plan=False):
            pass


# -------------------------------------------------------------------------------------------------
# Overrides
# -------------------------------------------------------------------------------------------------
def test_overrides_nest_and_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("KERASGL_PLANS", "off")
    monkeypatch.setenv("KERASGL_TUNING", "conv_pix=8")
    environment = dict(os.environ)
    with settings.override(plans=True):
        assert settings.get("plans") is True
        with settings.override(plans="no", tuning="conv_pix=16"):
            assert settings.get("plans") is False and settings.get("tuning") == "conv_pix=16"
            assert dict(os.environ) == environment          # never written
        assert settings.get("plans") is True and settings.get("tuning") == "conv_pix=8"
    assert settings.get("plans") is False


def test_an_override_is_undone_by_an_exception():
    class Boom(Exception):
        pass
    fusion_before, plans_before = settings.get("fusion"), settings.get("plans")
    with pytest.raises(Boom):
        with settings.override(fusion=not fusion_before):
            with settings.override(plans=False):
                assert settings.get("fusion") is (not fusion_before)
                raise Boom
    assert settings.get("fusion") is fusion_before and settings.get("plans") is plans_before
    assert not any(s.source == "override" for s in settings.describe()
                   if s.setting.key != "track_leaks")      # the suite tracks leaks by override


def test_override_values_are_checked_at_once():
    for values in ({"plans": "sometimes"}, {"plans": 1}, {"egl_device": -1}, {"egl_device": "x"},
                   {"egl_device": True}, {"compile_ahead": "never"}, {"tuning": 8}):
        with pytest.raises(SettingError, match=settings.SETTINGS[next(iter(values))].name):
            with settings.override(**values):
                pass
    with settings.override(compile_ahead=True, egl_device="2", track_leaks="off"):
        assert settings.get("compile_ahead") == "on" and settings.get("egl_device") == 2
        assert settings.get("track_leaks") is False


def test_describe_says_where_each_value_comes_from(monkeypatch):
    monkeypatch.setenv("KERASGL_PLANS", " OFF ")
    monkeypatch.delenv("KERASGL_FUSION", raising=False)
    monkeypatch.setenv("KERASGL_COMPILE_AHEAD", "whenever")
    with settings.override(tuning="conv_pix=8"):
        states = {s.setting.key: s for s in settings.describe()}
        table = settings.table()
    assert set(states) == set(settings.SETTINGS)
    assert (states["plans"].value, states["plans"].source) == ("off", "environment")
    assert (states["fusion"].value, states["fusion"].source) == ("on", "default")
    assert (states["tuning"].value, states["tuning"].source) == ("conv_pix=8", "override")
    bad = states["compile_ahead"]           # shown, not raised
    assert bad.source == "environment" and "got 'whenever'" in bad.problem
    assert re.search(r"KERASGL_PLANS +off +environment", table)
    assert re.search(r"KERASGL_COMPILE_AHEAD +'whenever' +environment, INVALID: ", table)
    assert len(table.splitlines()) == len(settings.SETTINGS)


# -------------------------------------------------------------------------------------------------
# The modules reading their settings through it
# -------------------------------------------------------------------------------------------------
def small_model(tmp_path):
    """Dense -> ReLU (a fusion when fusion is on), saved; with Keras's predictions of the model
    and of its Dense layer."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, name="dense"),
                              keras.layers.ReLU(name="relu")])
    path = str(tmp_path / "m.keras")
    model.save(path)
    x = np.random.default_rng(0).standard_normal((3, 6)).astype("float32")
    dense = keras.Model(model.inputs, model.get_layer("dense").output)
    return path, x, model.predict(x, verbose=0), dense.predict(x, verbose=0)


def test_plans_and_fusion_follow_the_environment_every_spelling(tmp_path, monkeypatch):
    """KERASGL_PLANS=off and KERASGL_FUSION=off used to disagree (off left plans on)."""
    path, x, expected, _ = small_model(tmp_path)
    for text, on in (("off", False), ("NO", False), ("0", False), ("on", True), ("", True)):
        monkeypatch.setenv("KERASGL_PLANS", text)
        monkeypatch.setenv("KERASGL_FUSION", text)
        with kg.load_model(path) as model:
            assert model.use_plans is on, text
            assert bool(fusion.fusions_of(model._graph)) is on, text
            for _ in range(4):             # eager, recorded twice, then a replayed plan
                assert_close(model.predict(x, verbose=0), expected)
            assert ("planned" in [p.status for p in model.plan_info()]) is on
    monkeypatch.setenv("KERASGL_PLANS", "of")
    with pytest.raises(SettingError, match="KERASGL_PLANS must be one of .* got 'of'"):
        kg.load_model(path)


def test_fusion_disabled_is_an_override(tmp_path, monkeypatch):
    path, x, expected, dense_expected = small_model(tmp_path)
    monkeypatch.setenv("KERASGL_FUSION", "1")
    with settings.override(fusion=True):
        with fusion.disabled():
            assert not fusion.enabled() and settings.get("fusion") is False
            assert {s.setting.key: s.source for s in settings.describe()}["fusion"] == "override"
            with kg.load_model(path) as plain:
                assert not fusion.fusions_of(plain._graph)
                assert_close(plain.predict(x, verbose=0), expected)
                inner = plain.predict(x, verbose=0, outputs=["dense"])   # readable unfused
        assert fusion.enabled()
        with kg.load_model(path) as fused:
            assert fusion.fusions_of(fused._graph)
            with pytest.raises(fusion.FusedOutputError):
                fused.predict(x, verbose=0, outputs=["dense"])
    assert_close(np.asarray(inner).reshape(dense_expected.shape), dense_expected)


def test_leak_tracking_follows_the_environment_and_track_leaks(monkeypatch):
    """KERASGL_TRACK_LEAKS=no used to turn tracking ON. A fresh process (the suite runs every test
    under track_leaks(True), an override) changes the variable between tensors."""
    code = ("import os, kerasgl as kg\n"
            "for text in ['no', 'ON', ' off ', 'Yes', '0', '', 'true']:\n"
            "    os.environ['KERASGL_TRACK_LEAKS'] = text\n"
            "    t = kg.zeros([1])\n"
            "    with kg.track_leaks(False):\n"
            "        u = kg.zeros([1])\n"
            "    print(kg.leak_tracking_enabled(), t._created_at is not None,\n"
            "          u._created_at is not None)\n"
            "    kg.dispose([t, u])\n")
    env = {**os.environ, "PYTHONPATH": ROOT}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    lines = [line.split() for line in run.stdout.splitlines()]
    expected = [False, True, False, True, False, False, True]
    assert lines == [[str(on), str(on), "False"] for on in expected]
    with settings.override(track_leaks=False):
        assert not kg.leak_tracking_enabled()
        with kg.track_leaks():
            assert settings.get("track_leaks") is True
        assert not kg.leak_tracking_enabled()


def test_tuning_reads_the_setting(monkeypatch):
    monkeypatch.setenv("KERASGL_TUNING", "conv_pix=8")
    assert tuning.current().conv_pix == 8
    with settings.override(tuning="conv_pix=16,conv_local_size=64"):
        assert (tuning.current().conv_pix, tuning.current().conv_local_size) == (16, 64)
    assert tuning.current().conv_pix == 8


def test_autotune_trials_leave_os_environ_alone(monkeypatch):
    """Each variant is timed under a tuning override: during every trial os.environ is what it
    was (KERASGL_TUNING included), while tuning.current() is the variant being timed."""
    monkeypatch.setenv("KERASGL_TUNING", "conv_pix=8")
    trial = autotune.Trial("elementwise_views", (False, True), "add")
    monkeypatch.setattr(autotune, "TRIALS", (trial,))
    environment = dict(os.environ)
    seen = []
    real_time = autotune._time

    def observed(run, repeats):
        seen.append((dict(os.environ) == environment, tuning.current().elementwise_views,
                     tuning.current().conv_pix))
        return real_time(run, repeats)
    monkeypatch.setattr(autotune, "_time", observed)
    chosen = autotune.measure(scale=1, repeats=1, rounds=2)
    # Round 1 times the values in order, round 2 in reverse (autotune.measure).
    assert seen == [(True, False, 8), (True, True, 8), (True, True, 8), (True, False, 8)]
    assert chosen["elementwise_views"] in (False, True) and chosen["conv_pix"] == 8
    assert dict(os.environ) == environment and settings.get("tuning") == "conv_pix=8"


def test_a_bad_egl_device_is_a_gl_context_error(monkeypatch):
    monkeypatch.setattr(context, "_device_index", None)
    monkeypatch.setenv("KERASGL_EGL_DEVICE", "gpu0")
    with pytest.raises(kg.GLContextError, match="KERASGL_EGL_DEVICE must be an integer") as caught:
        context._requested_device()
    assert isinstance(caught.value.__cause__, SettingError)
    monkeypatch.setenv("KERASGL_EGL_DEVICE", " 0 ")
    assert context._requested_device() == 0


def test_kerasgl_info_lists_every_setting():
    env = dict(os.environ, PYTHONPATH=ROOT, KERASGL_PLANS="off", KERASGL_TUNING="conv_pix=8")
    env.pop("KERASGL_FUSION", None)
    run = subprocess.run([sys.executable, "-m", "kerasgl.cli", "info"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for setting in settings.SETTINGS.values():
        assert re.search(rf"^{setting.name} +\S+ +(default|environment)", run.stdout, re.M), \
            setting.name
    assert re.search(r"^KERASGL_PLANS +off +environment$", run.stdout, re.M)
    assert re.search(r"^KERASGL_TUNING +conv_pix=8 +environment$", run.stdout, re.M)
    assert re.search(r"^KERASGL_FUSION +on +default$", run.stdout, re.M)


def test_the_docs_table_is_generated_from_the_declarations():
    with open(os.path.join(ROOT, "docs", "settings.md"), encoding="utf-8") as handle:
        text = handle.read()
    assert settings.markdown() in text, "regenerate docs/settings.md's table (settings.markdown())"
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        assert "docs/settings.md" in handle.read()
