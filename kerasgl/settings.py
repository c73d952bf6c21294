"""Every KERASGL_* environment variable kerasgl reads, declared once and read one way.

Each setting has a name (`plans` is KERASGL_PLANS), a type, a default and a one-line meaning
(docs/settings.md is generated from `SETTINGS`). `get("plans")` gives the value in force:

1. the innermost `override(...)` that sets it (tests, autotune's trials, fusion.disabled());
2. else the environment variable, read at each `get` (so `monkeypatch.setenv`, or setting
   os.environ before a model is loaded, is seen), parsed once per distinct text;
3. else the default. An empty or blank variable counts as unset.

Booleans take 1/0, true/false, on/off, yes/no (any case, surrounding blanks ignored). A value
a setting does not take raises SettingError when the setting is read, naming the variable, the
value and what it takes: a misspelt KERASGL_PLANS=of fails the model's load rather than quietly
leaving plans on.

Overrides are process-wide (like the environment), nest, and are undone when their `with` block
ends, by an exception too. They never write os.environ: a child process (the compile-ahead helper)
sees the environment only. `describe()` and `table()` give every setting in force and where its
value came from (default, environment, override): what `kerasgl info` prints.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass

from .errors import SettingError

PREFIX = "KERASGL_"
TRUE_WORDS = ("1", "true", "on", "yes")
FALSE_WORDS = ("0", "false", "off", "no")
BOOL_SPELLINGS = "1/0, true/false, on/off, yes/no"


@dataclass(frozen=True)
class Setting:
    """One KERASGL_* variable. `choices` (kind "choice"): the values it takes; where "on" and
    "off" are among them, the boolean spellings are accepted for them too."""
    key: str               # the Python name: get("plans"), override(plans=False)
    kind: str              # "bool", "int", "choice" or "text"
    default: object
    meaning: str           # one line, for docs/settings.md and `kerasgl info`
    choices: tuple = ()
    minimum: int | None = None      # kind "int"

    @property
    def name(self) -> str:
        return PREFIX + self.key.upper()

    def takes(self) -> str:
        """The values it takes, in words (error messages, docs)."""
        if self.kind == "bool":
            return BOOL_SPELLINGS
        if self.kind == "int":
            return "an integer" + ("" if self.minimum is None else f" >= {self.minimum}")
        if self.kind == "choice":
            return "/".join(self.choices) + (" (on/off also as 1/0, true/false, yes/no)"
                                             if "on" in self.choices else "")
        return "any text"

    def parse(self, text: str | None):
        """The value of the variable's text (None or blank: the default)."""
        if text is None or not text.strip():
            return self.default
        word = text.strip()
        if self.kind == "text":
            return word
        if self.kind == "int":
            try:
                number = int(word)
            except ValueError:
                number = None
            if number is not None and (self.minimum is None or number >= self.minimum):
                return number
        else:
            lowered = word.lower()
            flag = True if lowered in TRUE_WORDS else False if lowered in FALSE_WORDS else None
            if self.kind == "bool" and flag is not None:
                return flag
            if self.kind == "choice":
                if lowered in self.choices:
                    return lowered
                if flag is not None and "on" in self.choices:
                    return "on" if flag else "off"
        raise SettingError(f"{self.name} must be {'one of ' if self.kind != 'int' else ''}"
                           f"{self.takes()}, got {text!r}.")

    def check(self, value):
        """An override's value, as get() will return it: a Python value of the setting's type,
        or a text the variable could hold."""
        if isinstance(value, str):
            return self.parse(value) if value.strip() or self.kind == "text" else self.default
        if value is None and self.default is None:
            return None
        if self.kind == "bool" and isinstance(value, bool):
            return value
        if self.kind == "int" and isinstance(value, int) and not isinstance(value, bool):
            return self.parse(str(value))
        if self.kind == "choice" and isinstance(value, bool) and "on" in self.choices:
            return "on" if value else "off"
        raise SettingError(f"override({self.key}={value!r}): {self.name} takes {self.takes()}.")

    def show(self, value) -> str:
        """A value as `kerasgl info` and the docs print it."""
        if value is None:
            return "unset"
        if isinstance(value, bool):
            return "on" if value else "off"
        return str(value) if value != "" else "none"


SETTINGS: dict[str, Setting] = {s.key: s for s in (
    Setting("plans", "bool", True,
            "predict records each input shape's dispatches and replays them as an execution plan; "
            "off: always eager (docs/architecture.md)"),
    Setting("fusion", "bool", True,
            "load-time fusions (conv + BatchNormalization + activation, ...); off: every layer "
            "is its own dispatch and every inner output can be read"),
    Setting("track_leaks", "bool", False,
            "record where each tensor is created and disposed, for leak reports and "
            "DisposedError messages (docs/memory.md)"),
    Setting("tuning", "text", "",
            "kernel variant choices over the device's, e.g. conv_weights_image=0,conv_pix=8 "
            "(kerasgl/runtime/tuning.py)"),
    Setting("egl_device", "int", None,
            "the EGL device (GPU) index the GL context opens, as kerasgl.select_device; "
            "unset: EGL's first", minimum=0),
    Setting("pin_threads", "bool", True,
            "on llvmpipe, pin each compute worker thread to its own CPU (docs/performance.md)"),
    Setting("compile_ahead", "choice", "auto",
            "on llvmpipe, a helper process compiles a model's shaders while its first predict "
            "runs; auto: models of 40+ layers not seen before, on: always, off: never",
            choices=("auto", "on", "off")),
    Setting("device_policy", "choice", "auto",
            "the driver policy the GL context picks (kerasgl/devices/); auto: by GL_RENDERER, "
            "plain: none of a driver's own workarounds (llvmpipe's pinning, placement, helper)",
            choices=("auto", "plain")),
    Setting("max_storage_block", "int", None,
            "testing: the largest shader storage block (bytes) kerasgl assumes, where lower than "
            "the driver's GL_MAX_SHADER_STORAGE_BLOCK_SIZE, so that weights split over more "
            "buffers (docs/memory.md); unset: the driver's", minimum=1024),
)}

# -------------------------------------------------------------------------------------------------
# Reading
# -------------------------------------------------------------------------------------------------
_ABSENT = object()
_layers: list[dict] = []        # the active overrides, outermost first
_forced: dict = {}              # key -> value of the innermost override that sets it
_parsed: dict = {}              # key -> (the variable's raw text, its value): parse once per text

# os.environ.get of an unset variable costs ~0.8 us (its __getitem__ raises KeyError inside),
# too much for a read on every tensor; the dict behind os.environ gives the same answer in ~20 ns
# and is what os.environ[...] = / del / monkeypatch.setenv update. Where an interpreter has no such
# dict, os.environ.get is used.
if isinstance(getattr(os.environ, "_data", None), dict) and hasattr(os.environ, "encodekey"):
    _lookup = os.environ._data.get
    _ENV_KEYS = {key: os.environ.encodekey(s.name) for key, s in SETTINGS.items()}
else:
    _lookup = os.environ.get
    _ENV_KEYS = {key: s.name for key, s in SETTINGS.items()}


def _text(raw) -> str | None:
    """The variable's text from what the environment stores (bytes on POSIX)."""
    return os.environ.decodevalue(raw) if isinstance(raw, bytes) else raw


def get(key: str):
    """The value of setting `key` in force (see the module's docstring). Cheap (~0.15 us):
    callable on every tensor. Raises SettingError for a variable holding a value the setting does
    not take."""
    value = _forced.get(key, _ABSENT)
    if value is not _ABSENT:
        return value
    return from_environment(key)


def from_environment(key: str):
    """The value the environment gives setting `key` (its default where the variable is unset or
    blank), overrides aside."""
    try:
        raw = _lookup(_ENV_KEYS[key])
    except KeyError:
        raise _unknown(key) from None
    seen = _parsed.get(key)
    if seen is not None and seen[0] == raw:
        return seen[1]
    value = SETTINGS[key].parse(_text(raw))      # a bad value raises (and is never cached)
    _parsed[key] = (raw, value)
    return value


def _unknown(key) -> SettingError:
    return SettingError(f"kerasgl has no setting {key!r}; its settings: {', '.join(SETTINGS)}.")


@contextmanager
def override(**values):
    """Inside the block, the given settings have the given values whatever the environment says,
    e.g. `with settings.override(plans=False, tuning="conv_pix=8"):`. Values are checked here
    (SettingError for an unknown setting or a value it does not take)."""
    for key in values:
        if key not in SETTINGS:
            raise _unknown(key)
    layer = {key: SETTINGS[key].check(value) for key, value in values.items()}
    _layers.append(layer)
    _refresh()
    try:
        yield
    finally:
        # By identity: a generator-based block closed out of order must not drop another's layer.
        for index in range(len(_layers) - 1, -1, -1):
            if _layers[index] is layer:
                del _layers[index]
                break
        _refresh()


def _refresh() -> None:
    global _forced
    forced = {}
    for layer in _layers:
        forced.update(layer)
    _forced = forced            # one assignment: a reader never sees a half-built dict


# -------------------------------------------------------------------------------------------------
# Describing
# -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class State:
    """A setting as it stands: its value shown as text, and where it came from."""
    setting: Setting
    value: str
    source: str          # "default", "environment" or "override"
    problem: str = ""    # the SettingError get() raises, for a value the setting does not take


def describe() -> list[State]:
    """Every setting's value in force and its source. Never raises: a variable holding a value
    the setting does not take is shown with the error get() would raise."""
    states = []
    for key, setting in SETTINGS.items():
        if key in _forced:
            states.append(State(setting, setting.show(_forced[key]), "override"))
            continue
        text = _text(_lookup(_ENV_KEYS[key]))
        source = "default" if text is None or not text.strip() else "environment"
        try:
            states.append(State(setting, setting.show(setting.parse(text)), source))
        except SettingError as exc:
            states.append(State(setting, repr(text), source, str(exc)))
    return states


def table() -> str:
    """The settings in force, one line each: what `kerasgl info` prints."""
    states = describe()
    name_width = max(len(s.setting.name) for s in states)
    value_width = max(len(s.value) for s in states)
    return "\n".join(f"{s.setting.name:{name_width}}  {s.value:{value_width}}  {s.source}"
                     + (f", INVALID: {s.problem}" if s.problem else "") for s in states)


def markdown() -> str:
    """The table of docs/settings.md (every setting, its type, default and meaning)."""
    rows = ["| variable | takes | default | meaning |", "|---|---|---|---|"]
    for setting in SETTINGS.values():
        rows.append(f"| `{setting.name}` | {setting.takes()} | {setting.show(setting.default)} "
                    f"| {setting.meaning} |")
    return "\n".join(rows)
