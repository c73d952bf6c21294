"""Byte, config, zip and code-execution-bait mutations for the hostile-file corpus.

Byte mutations take the file's bytes and a seeded numpy Generator; config mutations take the
model config (a dict, never changed in place) and return the new JSON text (deep nesting and huge
numbers are spliced in as text: json.dumps itself cannot write them); zip tricks take the
archive's members (fuzz_zip.Member) and return the new list.
"""
from __future__ import annotations

import base64
import copy
import json
import marshal

from fuzz_zip import Member, deflated_with_zeros, stored, zip_bytes

REFUSE, ANY = "refuse", "any"
_SPLICE = "@@kerasgl-fuzz-splice@@"
DEEP = 5000
BAIT_FILENAME = "kerasgl-fuzz-bait"     # co_filename of the bait code: the worker watches for it


# ----------------------------------------------------------------------------- bytes

def truncated(data: bytes, rng) -> bytes:
    return data[:int(rng.integers(1, len(data)))]


def flipped(data: bytes, rng) -> bytes:
    out = bytearray(data)
    for _ in range(int(rng.integers(1, 9))):
        out[int(rng.integers(0, len(out)))] ^= 1 << int(rng.integers(0, 8))
    return bytes(out)


def zeroed(data: bytes, rng) -> bytes:
    out = bytearray(data)
    start = int(rng.integers(0, len(out)))
    length = int(rng.integers(1, 257))
    out[start:start + length] = bytes(len(out[start:start + length]))
    return bytes(out)


BYTE_MUTATIONS = {"truncate": truncated, "flip": flipped, "zero": zeroed}


def heap_damage(data: bytes, config: bool = True) -> dict[str, bytes]:
    """Zeroed regions of an HDF5 global heap collection (where variable-length strings live):
    the one holding the model_config text, or (config=False) the file's first one.

    A zeroed object header leaves an object of index 0 and size 0 ("free space of no size"),
    which libhdf5's heap decoder never steps past: reading the attribute spins forever unless
    the reader checks the heap first. Returns {} where the file has no such heap."""
    if config:
        start = data.find(b'{"class_name"')
        heap = data.rfind(b"GCOL", 0, start) if start > 0 else -1
        if heap < 0:
            return {}
        end = data.find(b"\x00", start)
        regions = {"heap_config_object_header": (start - 16, 16),
                   "heap_first_object": (heap + 16, 64),
                   "heap_after_config": ((end + 7) // 8 * 8, 64)}
    else:
        heap = data.find(b"GCOL")
        if heap < 0:
            return {}
        regions = {"heap_first_object": (heap + 16, 64)}
    out = {}
    for name, (offset, length) in regions.items():
        damaged = bytearray(data)
        damaged[offset:offset + length] = bytes(length)
        out[name] = bytes(damaged)
    return out


# ----------------------------------------------------------------------------- configs

def _entries(model_json) -> list:
    config = model_json.get("config")
    return config.get("layers", []) if isinstance(config, dict) else config


def _weighted(model_json) -> dict:
    """The first Dense or Conv entry (the layer a value mutation hits)."""
    for entry in _entries(model_json):
        if entry.get("class_name") in ("Dense", "Conv2D", "Conv1D"):
            return entry
    raise LookupError("no Dense/Conv layer")


def _size_key(entry: dict) -> str:
    return "units" if entry["class_name"] == "Dense" else "filters"


def _dumps(model_json, splice: str | None = None) -> str:
    text = json.dumps(model_json)
    return text.replace(json.dumps(_SPLICE), splice) if splice is not None else text


def _edit(edit):
    """A mutation that edits a copy of the config (edit returns False when it does not apply)."""
    def mutation(model_json):
        mj = copy.deepcopy(model_json)
        return None if edit(mj) is False else _dumps(mj)
    return mutation


def _set_value(key_of, value):
    def edit(mj):
        entry = _weighted(mj)
        entry["config"][key_of(entry) if callable(key_of) else key_of] = value
    return _edit(edit)


def _splice_value(key_of, raw: str):
    def mutation(model_json):
        mj = copy.deepcopy(model_json)
        entry = _weighted(mj)
        entry["config"][key_of(entry) if callable(key_of) else key_of] = _SPLICE
        return _dumps(mj, raw)
    return mutation


def _input_entry(mj):
    entries = _entries(mj)
    first = entries[0]
    if first.get("class_name") == "InputLayer":
        return first["config"], "batch_shape" if "batch_shape" in first["config"] \
            else "batch_input_shape"
    return first["config"], "batch_input_shape"


def _input_shape(value):
    def edit(mj):
        config, key = _input_entry(mj)
        config[key] = value
    return _edit(edit)


def _functional(edit):
    def guarded(mj):
        if mj.get("class_name") not in ("Functional", "Model"):
            return False
        return edit(mj)
    return _edit(guarded)


def _inbound(entry: dict, replace):
    """Rewrite the first tensor reference of `entry`'s first call, in either dialect."""
    node = entry["inbound_nodes"][0]
    if isinstance(node, dict):            # Keras 3: {"args": [{"class_name": "__keras_tensor__"...
        history = node["args"][0]["config"]["keras_history"]
        node["args"][0]["config"]["keras_history"] = replace(history)
    else:                                 # Keras 2: [[name, node, tensor, kwargs], ...]
        node[0][:3] = replace(node[0][:3])


def _ref_edit(replace):
    def edit(mj):
        _inbound(_weighted(mj), lambda h: replace(h, _weighted(mj)["name"]))
    return _functional(edit)


def _two_cycle(mj):
    entries = [e for e in _entries(mj) if e.get("inbound_nodes")]
    if len(entries) < 2:
        return False
    a, b = entries[0], entries[-1]
    _inbound(a, lambda h: [b["name"], 0, 0])


def _wrap_in_sequentials(levels: int):
    """The whole model as the only layer of a Sequential, `levels` times over (built as text)."""
    def mutation(model_json):
        inner = _dumps(model_json)
        head = '{"class_name": "Sequential", "config": {"name": "wrap%d", "layers": ['
        text = "".join(head % i for i in range(levels)) + inner + "]}}" * levels
        return text
    return mutation


def bait_code(marker: str):
    """Marshalled bytecode that, if anything ever ran it, would leave `marker` behind."""
    source = f"def bait(x):\n    open({marker!r}, 'w').close()\n    return x\n"
    namespace: dict = {}
    exec(compile(source, BAIT_FILENAME, "exec"), namespace)
    return marshal.dumps(namespace["bait"].__code__)


def _lambda_layer(marker: str, keras_major: int, name: str = "bait") -> dict:
    code = base64.b64encode(bait_code(marker)).decode("ascii")
    if keras_major == 2:
        function = [code, None, None]
        config = {"name": name, "trainable": True, "dtype": "float32", "function": function,
                  "function_type": "lambda", "module": "__main__", "output_shape": None,
                  "output_shape_type": "raw", "output_shape_module": None, "arguments": {}}
        return {"class_name": "Lambda", "config": config}
    function = {"class_name": "__lambda__", "config": {"code": code, "defaults": None,
                                                       "closure": None}}
    return {"class_name": "Lambda", "module": "keras.layers", "registered_name": "Lambda",
            "config": {"name": name, "trainable": True, "dtype": "float32",
                       "function": function, "arguments": {}}}


def _insert_lambda(marker: str, keras_major: int):
    def edit(mj):
        if mj.get("class_name") != "Sequential":
            return False
        entries = _entries(mj)
        entries.insert(len(entries) - 1, _lambda_layer(marker, keras_major))
    return _edit(edit)


_EVAL_BAIT = {"module": "builtins", "class_name": "function", "config": "eval",
              "registered_name": "eval"}
_OS_BAIT = {"module": "os", "class_name": "system", "registered_name": "system",
            "config": {"name": "os_bait", "command": "touch kerasgl-fuzz-os-bait"}}


def config_mutations(marker: str, keras_major: int) -> dict:
    """{name: (mutation, expect)}; a mutation returns the JSON text, or None (not applicable)."""
    size = _size_key
    deep_list = "[" * DEEP + "]" * DEEP
    deep_dict = '{"a": ' * DEEP + "0" + "}" * DEEP
    m = {
        "deep_list_in_size": (_splice_value(size, deep_list), ANY),
        "deep_dict_in_initializer": (_splice_value("kernel_initializer", deep_dict), ANY),
        "deep_list_900": (_splice_value(size, "[" * 900 + "]" * 900), ANY),
        "deep_layers_list": (lambda mj: _dumps({**mj, "config": _SPLICE}
                                               if isinstance(mj["config"], list) else
                                               {**mj, "config": {**mj["config"],
                                                                 "layers": _SPLICE}},
                                               deep_list), ANY),
        "huge_int_digits": (_splice_value(size, "1" + "0" * 5000), ANY),
        "float_overflow": (_splice_value(size, "1e400"), ANY),
        "nan_size": (_splice_value(size, "NaN"), ANY),
        "json_truncated": (lambda mj: _dumps(mj)[:len(_dumps(mj)) // 2], ANY),
        "json_trailing_garbage": (lambda mj: _dumps(mj) + "}}]", ANY),
        "json_bom": (lambda mj: "\ufeff" + _dumps(mj), ANY),
        "json_duplicate_keys": (_splice_value(size, '8, "units": 9, "filters": 9'), ANY),
        "wrap_300_sequentials": (_wrap_in_sequentials(300), ANY),
        "wrap_3_sequentials": (_wrap_in_sequentials(3), ANY),
    }
    for label, value in (("1e12", 10 ** 12), ("neg", -1), ("zero", 0), ("half", 2.5),
                         ("str", "8"), ("none", None), ("true", True), ("list", []),
                         ("dict", {}), ("2pow31", 2 ** 31), ("2pow63", 2 ** 63)):
        m[f"size_{label}"] = (_set_value(size, value), ANY)
    for label, value in (("huge", [10 ** 9, 10 ** 9]), ("zero", [0, 0]), ("neg", [-3, -3]),
                         ("str", "3"), ("long", [3, 3, 3, 3, 3])):
        m[f"kernel_size_{label}"] = (_set_value("kernel_size", value), ANY)
        m[f"strides_{label}"] = (_set_value("strides", value), ANY)
    for label, value in (("string", "yes"), ("false", False), ("int", 7)):
        m[f"use_bias_{label}"] = (_set_value("use_bias", value), ANY)
    for label, value in (("unknown", "no_such_activation"), ("eval_bait", _EVAL_BAIT),
                         ("int", 5), ("none", None), ("os_bait", _OS_BAIT)):
        m[f"activation_{label}"] = (_set_value("activation", value), ANY)
    for label, value in (("float64", "float64"), ("complex", "complex64"), ("string", "string"),
                         ("int", 5), ("policy_list", {"class_name": "DTypePolicy",
                                                      "config": {"name": [1]}})):
        m[f"dtype_{label}"] = (_set_value("dtype", value), ANY)
    for label, value in (("1e12", [None, 10 ** 12]), ("neg", [None, -5]), ("str", "abc"),
                         ("rank40", [None] * 40), ("empty", []), ("float", [None, 2.5])):
        m[f"input_shape_{label}"] = (_input_shape(value), ANY)
    for label, value in (("int", 123), ("empty", ""), ("megabyte", "n" * 1_000_000),
                         ("path", "../../x")):
        m[f"name_{label}"] = (_set_value("name", value), ANY)
    m["name_duplicate"] = (_edit(lambda mj: _entries(mj)[-1]["config"].__setitem__(
        "name", _weighted(mj)["config"]["name"])), ANY)
    for label, value in (("unknown", "NoSuchLayer"), ("int", 123), ("none", None)):
        m[f"class_name_{label}"] = (_edit(lambda mj, v=value: _weighted(mj).__setitem__(
            "class_name", v)), ANY)
    m["layer_without_config"] = (_edit(lambda mj: _weighted(mj).pop("config")), ANY)
    m["layer_config_list"] = (_edit(lambda mj: _weighted(mj).__setitem__("config", [])), ANY)
    m["layer_entry_int"] = (_edit(lambda mj: _entries(mj).append(5)), ANY)
    m["top_level_list"] = (lambda mj: "[]", ANY)
    m["top_level_string"] = (lambda mj: '"model"', ANY)
    m["layers_dict"] = (_edit(lambda mj: mj["config"].__setitem__("layers", {})
                              if isinstance(mj["config"], dict) else False), ANY)
    m["layers_empty"] = (_edit(lambda mj: mj["config"].__setitem__("layers", [])
                               if isinstance(mj["config"], dict) else False), ANY)
    m["ref_self"] = (_ref_edit(lambda h, own: [own, 0, 0]), ANY)
    m["ref_ghost"] = (_ref_edit(lambda h, own: ["ghost", 0, 0]), ANY)
    m["ref_node_1e6"] = (_ref_edit(lambda h, own: [h[0], 10 ** 6, 0]), ANY)
    m["ref_tensor_neg"] = (_ref_edit(lambda h, own: [h[0], h[1], -1]), ANY)
    m["ref_short"] = (_ref_edit(lambda h, own: [h[0], h[1]]), ANY)
    m["ref_two_cycle"] = (_functional(_two_cycle), ANY)
    m["outputs_ghost"] = (_functional(lambda mj: mj["config"].__setitem__(
        "output_layers", [["ghost", 0, 0]])), ANY)
    m["inputs_repeated"] = (_functional(lambda mj: mj["config"].__setitem__(
        "input_layers", [mj["config"]["input_layers"][0]] * 10000
        if isinstance(mj["config"]["input_layers"][0], list) else False)), ANY)
    m["lambda_bait"] = (_insert_lambda(marker, keras_major), REFUSE)
    return m


# ----------------------------------------------------------------------------- zip tricks

def _named(members: list[Member], name: str) -> Member:
    return next(m for m in members if m.name == name)


def _renamed(members, old, new):
    return [Member(new, m.raw, m.crc, m.size, m.method, m.flags) if m.name == old else m
            for m in members]


def _patched(members, name, **fields):
    out = []
    for m in members:
        if m.name == name:
            m = Member(**{**m.__dict__, **fields})
        out.append(m)
    return out


def zip_tricks(bomb_bytes: int) -> dict:
    """{name: (trick, expect)}; a trick maps the members of a .keras archive to new ones."""
    hostile = stored("config.json", b'{"class_name": "Sequential", "config": {"layers": []}}')

    def bomb(name):
        return lambda ms: [deflated_with_zeros(name, _named(ms, name).raw, bomb_bytes)
                           if m.name == name else m for m in ms]
    many = [stored(f"assets/empty_{i}", b"") for i in range(5000)]
    return {
        "duplicate_config_hostile_first": (lambda ms: [hostile] + ms, REFUSE),
        "duplicate_config_hostile_last": (lambda ms: ms + [hostile], REFUSE),
        "duplicate_weights": (lambda ms: ms + [_named(ms, "model.weights.h5")], REFUSE),
        "traversal_names": (lambda ms: ms + [stored(n, b"escape") for n in (
            "../../kerasgl-fuzz-escape", "/tmp/kerasgl-fuzz-absolute", "a/../../../b",
            "C:\\kerasgl-fuzz")], ANY),
        "config_in_subfolder": (lambda ms: _renamed(ms, "config.json", "x/config.json"), ANY),
        "weights_in_subfolder": (lambda ms: _renamed(ms, "model.weights.h5",
                                                     "x/model.weights.h5"), ANY),
        "bomb_config": (bomb("config.json"), REFUSE),
        "bomb_metadata": (bomb("metadata.json"), REFUSE),
        "bomb_weights": (bomb("model.weights.h5"), REFUSE),
        "bomb_unread_member": (lambda ms: ms + [deflated_with_zeros("assets/blob", b"",
                                                                    bomb_bytes)], ANY),
        "declared_size_small": (lambda ms: _patched(ms, "config.json", size=10), ANY),
        "declared_size_huge": (lambda ms: _patched(ms, "config.json", size=1 << 40), REFUSE),
        "encrypted_flag": (lambda ms: _patched(ms, "config.json", flags=1), ANY),
        "unknown_method": (lambda ms: _patched(ms, "config.json", method=99), ANY),
        "many_members": (lambda ms: many + ms, ANY),
        "weights_not_hdf5": (lambda ms: [stored("model.weights.h5", zip_bytes(ms))
                                         if m.name == "model.weights.h5" else m for m in ms], ANY),
        "weights_empty": (lambda ms: [stored("model.weights.h5", b"")
                                      if m.name == "model.weights.h5" else m for m in ms], ANY),
    }
