"""The ONE place where the Keras 2 and Keras 3 config dialects become a ModelSpec.

What model.py can rely on (for every file dialect):

ModelSpec
- kind: "Sequential" or "Functional" (Keras 2's class "Model" is reported as "Functional").
- Sequential: layers in call order; layers[0] is an InputLayer whenever the input shape is known
  (synthesised from a Keras 2 first layer's `batch_input_shape`, or from `build_input_shape`);
  every LayerSpec.inbound_nodes is []; inputs == outputs == [].
- Functional: layers in config order; inputs/outputs are TensorRefs (input_keys/output_keys hold
  the dict keys when the model was built with dicts, in Keras' flattening order = sorted keys).
- TensorRef.node_index is the 0-based index into the referenced LayerSpec.inbound_nodes (0 for an
  InputLayer), whatever the file counted (see nodes.py); every ref is checked to exist.
- input_shapes: batch shapes as lists with None for unknown dims; input_dtypes: strings.

LayerSpec
- class_name as written (nested models: "Sequential"/"Functional"), name always set.
- module: as written by Keras 3 (e.g. "keras.layers"), None when the file does not record it.
  Op nodes (Keras 3 `x + 3.0`, `keras.ops.multiply(a, b)`) always have a module starting with
  "keras.src.ops" (legacy .h5 files drop modules: there an entry whose config has no
  "trainable" key is an op, and gets module "keras.src.ops"). Keras 2's TFOpLambda stays a layer.
- nested models: `inner` is their ModelSpec, `config` is {"name", "trainable", "dtype"} and
  `weights` is [] (weights live on the inner layers).
- NodeSpec: args/kwargs exactly as called; first-argument lists (merge layers) stay lists.
  Keras 2 files record only the FIRST argument positionally and every later one by name
  (keras/engine/node.py serialize), so `mha(q, v)` arrives as args=[q], kwargs={"value": v}:
  the graph must hand tensor kwargs (and their shapes) to the layer by keyword.

Layer config (LayerSpec.config)
- "name" (str), "trainable" (bool) and, for layers, "dtype" (str): a DTypePolicy / Policy dict
  becomes its name ("float32", "mixed_float16"); a quantized policy becomes its source dtype and
  adds "quantization_mode".
- "activation" / "recurrent_activation": a string name whenever the file names a built-in
  activation (serialized function dicts are reduced); an activation given as a layer stays a
  (normalised) layer dict. Keras 2's "hard_sigmoid" keeps its name: ModelSpec.keras_major says
  which formula applies.
- InputLayer: "batch_shape" (list, None for unknown dims), "dtype", "sparse", "ragged".
- Keras 2 `batch_input_shape` is removed from non-input layers (it became the InputLayer).
- Options that older files (Keras 2) spell differently are made Keras 3's by the layer class's
  `normalize_keras2_config` (kerasgl/layers/*.py, declared through saving/layer_rules.py), e.g.:
  BatchNormalization "axis": a one-element list becomes an int (a longer list, Keras 2's several
  axes, stays a list; its weights then have the broadcast shape, e.g. (1, H, 1, C)); LeakyReLU:
  "negative_slope" (Keras 2's "alpha" renamed); GRU: "reset_after" always present (Keras 2 files
  that predate it meant False); "groups" removed from DepthwiseConv*, SeparableConv* and
  Conv*Transpose (Keras 2 wrote it there, where it meant nothing); Embedding's "input_length"
  and SpatialDropout*'s "noise_shape" removed. Keras 2 BatchNormalization "renorm": True stays in
  the config, but the three training-only arrays it adds are dropped from `weights` (its
  inference_weights): inference is plain BN.
- Kept as written, for the layers to read: Keras 2 MultiHeadAttention's "query_shape" /
  "key_shape" / "value_shape" (build shapes) and "softmax_robust_masking".
- RNN layers (SimpleRNN/LSTM/GRU/RNN, also inside Bidirectional): Keras 2's "time_major" is
  KEPT as written (a bool; absent in Keras 3 files, which means False). True means the layer's
  input and sequence output are (time, batch, ...) instead of (batch, time, ...); the returned
  states stay (batch, units). The RNN layer must honour it (or refuse it), never ignore it.
- Sub-layer configs (Bidirectional/TimeDistributed "layer", RNN "cell", ...) are normalised the
  same way, recursively; initializers, regularizers and constraints are left as written.
- Lambda layers: the config (incl. the marshalled "function") is kept as inert data.
"""
from __future__ import annotations

import math
import re
from typing import Any

from ..errors import ModelFileError
from . import layer_rules, nodes
from .json_text import check_nesting
from .spec import LayerSpec, ModelSpec, TensorRef

MODEL_CLASSES = {"Sequential", "Functional", "Model"}
OP_MODULE_PREFIX = "keras.src.ops"


# ----------------------------------------------------------------------------- dialect detection

def keras_major_from_version(version: str | None) -> int | None:
    if not version:
        return None
    match = re.match(r"\s*(\d+)", str(version))
    return int(match.group(1)) if match else None


def _walk_dicts(value):
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _walk_dicts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk_dicts(v)


def detect_keras_major(model_json: Any) -> int:
    """For configs that carry no keras_version (Keras 3's to_json): Keras 3 marks tensors as
    `__keras_tensor__`, dtypes as DTypePolicy dicts and input shapes as `batch_shape`."""
    for d in _walk_dicts(model_json):
        class_name = d.get("class_name")
        if class_name in ("__keras_tensor__", "DTypePolicy"):
            return 3
        if class_name == "InputLayer" and "batch_shape" in (d.get("config") or {}):
            return 3
    return 2


def resolve_keras_major(version: str | None, model_json: Any, source: str) -> int:
    major = keras_major_from_version(version)
    if major is None:
        return detect_keras_major(model_json)
    if major not in (2, 3):
        raise ModelFileError(f"{source}: written by Keras {version}; only Keras 2 and Keras 3 "
                             "files are supported")
    return major


# ----------------------------------------------------------------------------- layer configs

def normalize_dtype(value) -> tuple[str, str | None]:
    """(dtype name, quantization mode or None) from a string or a (DType)Policy dict."""
    if value is None:
        return "float32", None
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict):
        config = value.get("config")
        if isinstance(config, dict):
            if "source_name" in config:            # Keras 3 QuantizedDTypePolicy
                return str(config["source_name"]), config.get("mode")
            if "name" in config:
                return str(config["name"]), None
    raise ValueError(f"unrecognised dtype {value!r}")


def normalize_activation(value):
    """A built-in activation's name where the file makes that possible, else the value itself."""
    if value is None:
        return "linear"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        module = value.get("module") or "keras"
        config = value.get("config")
        if isinstance(config, str) and module.startswith("keras"):
            return config                      # Keras 3 serialized function
        if _looks_like_layer(value):
            return _normalize_sublayer(value)
    return value


def _looks_like_layer(value) -> bool:
    """A serialized layer (as opposed to an initializer/regularizer/constraint/dtype policy):
    every layer config has a name plus trainable/dtype, which those other objects lack."""
    if not isinstance(value, dict) or not isinstance(value.get("class_name"), str):
        return False
    config = value.get("config")
    return (isinstance(config, dict) and "name" in config
            and ("trainable" in config or "dtype" in config))


def _normalize_sublayer(value: dict) -> dict:
    out = dict(value)
    out["config"] = normalize_layer_config(value["class_name"], value["config"])
    return out


def _is_number_tree(value) -> bool:
    if isinstance(value, list):
        return all(_is_number_tree(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool) or value is None


def _normalize_nested_values(value):
    if isinstance(value, dict):
        # tf.keras 1.x wrote numpy values (ReLU's max_value) as {"type": "ndarray", "value": 6.0};
        # its loader made them arrays again: here the plain number (or nested list of numbers).
        # A scalar NaN there is an option that was None: that Keras ran K.cast_to_floatx(None),
        # which is NaN, and TensorFlow 1.x's relu then skipped the cap (`if max_value is not
        # None`, then a clip whose NaN bound leaves values as they are): the model ran without
        # it, so the option reads as None, as the Keras that wrote it computed.
        if set(value) == {"type", "value"} and value["type"] == "ndarray" \
                and _is_number_tree(value["value"]):
            number = value["value"]
            if isinstance(number, float) and math.isnan(number):
                return None
            return number
        if _looks_like_layer(value):
            return _normalize_sublayer(value)
        return {k: _normalize_nested_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize_nested_values(v) for v in value]
    return value


def normalize_shape(shape) -> list | None:
    if shape is None:
        return None
    return [None if d is None else int(d) for d in shape]


def normalize_input_layer_config(config: dict) -> dict:
    out = dict(config)
    if "batch_shape" in out:
        batch_shape = out["batch_shape"]
    elif "batch_input_shape" in out:                     # Keras 2
        batch_shape = out.pop("batch_input_shape")
    elif out.get("shape") is not None:
        batch_shape = [out.get("batch_size")] + list(out.pop("shape"))
    elif out.get("input_shape") is not None:
        batch_shape = [out.get("batch_size")] + list(out.pop("input_shape"))
    else:
        batch_shape = None
    out["batch_shape"] = normalize_shape(batch_shape)
    out["dtype"], _ = normalize_dtype(out.get("dtype"))
    out.setdefault("sparse", False)
    out.setdefault("ragged", False)
    return out


def normalize_layer_config(class_name: str, config: dict) -> dict:
    """One layer's config in the form described in this module's docstring."""
    if class_name == "InputLayer":
        return normalize_input_layer_config(config)
    out = {k: _normalize_nested_values(v) for k, v in config.items()}
    out.setdefault("trainable", True)
    dtype, quantization_mode = normalize_dtype(out.get("dtype"))
    out["dtype"] = dtype
    if quantization_mode is not None:
        out["quantization_mode"] = quantization_mode
    out.pop("batch_input_shape", None)
    for key in ("activation", "recurrent_activation"):
        if key in out:
            out[key] = normalize_activation(out[key])
    # The class's own Keras 2 spellings (kerasgl/layers, declared through layer_rules.py).
    return layer_rules.rules_for(class_name).normalize_keras2_config(out)


def _model_layer_config(config: dict) -> dict:
    dtype, _ = normalize_dtype(config.get("dtype"))
    return {"name": config.get("name"), "trainable": config.get("trainable", True), "dtype": dtype}


# ----------------------------------------------------------------------------- model structure

def _is_nested_model(class_name: str, config) -> bool:
    return class_name in MODEL_CLASSES and (
        isinstance(config, list) or (isinstance(config, dict) and "layers" in config))


# Keras ops whose config carries a "dtype" argument (so "dtype" alone cannot tell them from a
# layer); none of these names is also a Keras layer class.
_OPS_WITH_DTYPE = {"ZerosLike", "OnesLike", "FullLike", "Cast", "Zeros", "Ones", "Full", "Eye",
                   "Identity", "Tri", "Arange", "Linspace", "Logspace", "Empty", "EmptyLike",
                   "ConvertToTensor", "Cumsum", "Cumprod", "OneHot", "MultiHot", "Prod",
                   "Nancumsum", "Nancumprod", "Geomspace", "View", "Array", "SaturateCast"}


def _is_op_node(entry: dict, keras_major: int) -> bool:
    module = entry.get("module")
    if module:
        return module.startswith(OP_MODULE_PREFIX) or module.startswith("keras.ops")
    # Legacy .h5 files of Keras 3 drop modules. A Layer config always has "dtype" (its dtype
    # policy) and usually "trainable" (SpatialDropout's lacks it); an op's config has neither,
    # except the ops that take a dtype argument (ZerosLike appears wherever Keras merges masks).
    config = entry.get("config")
    if keras_major != 3 or entry.get("class_name") == "InputLayer" or not isinstance(config, dict):
        return False
    if "trainable" in config:
        return False
    return "dtype" not in config or entry.get("class_name") in _OPS_WITH_DTYPE


def _entry_config(entry: dict) -> dict | list:
    config = entry.get("config")
    if config is None:
        raise ValueError("layer entry has no config")
    return config


def _layer_spec(entry: dict, keras_major: int, source: str) -> LayerSpec:
    """A LayerSpec without inbound nodes (those need every layer known first)."""
    class_name = entry["class_name"]
    if not isinstance(class_name, str):
        raise ValueError(f"class_name {class_name!r} is not a string")
    config = _entry_config(entry)
    if _is_nested_model(class_name, config):
        inner = _parse_model(class_name, config, keras_major, source)
        flat_config = config if isinstance(config, dict) else {}
        layer_config = _model_layer_config({**flat_config, "name": inner.name})
        return LayerSpec(class_name=inner.kind, name=inner.name, config=layer_config,
                         module=entry.get("module"), inner=inner)
    name = entry.get("name") or config.get("name")
    if _is_op_node(entry, keras_major):
        module = entry.get("module") or OP_MODULE_PREFIX
        return LayerSpec(class_name=class_name, name=name, config={**config, "name": name},
                         module=module)
    layer_config = normalize_layer_config(class_name, {**config, "name": name})
    return LayerSpec(class_name=class_name, name=name, config=layer_config,
                     module=entry.get("module"))


def _raw_first_layer_shape(entry: dict) -> list | None:
    config = entry.get("config") or {}
    if not isinstance(config, dict):
        return None
    for key in ("batch_input_shape", "batch_shape"):
        if config.get(key) is not None:
            return config[key]
    return None


def _parse_sequential(config, keras_major: int, source: str) -> ModelSpec:
    # Old Keras 2 stored a Sequential config as a bare list of layers.
    entries = config if isinstance(config, list) else config.get("layers", [])
    name = "sequential" if isinstance(config, list) else config.get("name", "sequential")
    layers = [_with_layer_context(source, e, lambda e=e: _layer_spec(e, keras_major, source))
              for e in entries]
    if layers and layers[0].class_name != "InputLayer":
        shape = _raw_first_layer_shape(entries[0])
        if shape is None and isinstance(config, dict):
            shape = config.get("build_input_shape")
        if shape is not None:
            # Keras 2 created this InputLayer implicitly and named it "<first layer>_input".
            dtype = layers[0].config.get("dtype", "float32")
            input_config = normalize_input_layer_config(
                {"name": f"{layers[0].name}_input", "batch_shape": list(shape), "dtype": dtype})
            layers.insert(0, LayerSpec("InputLayer", input_config["name"], input_config))
    spec = ModelSpec(kind="Sequential", name=name, layers=layers, inputs=[], outputs=[],
                     keras_major=keras_major, source=source)
    if layers and layers[0].class_name == "InputLayer":
        spec.input_shapes = [layers[0].config["batch_shape"]]
        spec.input_dtypes = [layers[0].config["dtype"]]
    return spec


class NodeIndexing:
    """How far a file's node indices for a layer are from our 0-based call index.

    A nested Functional model owns a built-in call (its inputs -> outputs) that is not part of the
    outer graph. Keras 2 counts it everywhere (also for a Sequential that starts with an
    InputLayer); Keras 3 counts it only in `input_layers`/`output_layers` and only for Functional
    models (keras/src/models/functional.py: get_config and serialize_node).
    """

    def __init__(self, entries: list[dict], keras_major: int):
        self._has_builtin_call: set[str] = set()
        for entry in entries:
            class_name, config = entry.get("class_name"), entry.get("config")
            if not _is_nested_model(class_name, config):
                continue
            if class_name != "Sequential":
                self._has_builtin_call.add(entry.get("name") or config.get("name"))
            elif keras_major == 2:
                inner_entries = config if isinstance(config, list) else config.get("layers", [])
                if inner_entries and (inner_entries[0].get("class_name") == "InputLayer"
                                      or _raw_first_layer_shape(inner_entries[0]) is not None):
                    self._has_builtin_call.add(entry.get("name") or config.get("name"))
        self._keras_major = keras_major

    def in_nodes(self, layer_name: str) -> int:
        if self._keras_major == 3:
            return 0
        return int(layer_name in self._has_builtin_call)

    def in_endpoints(self, layer_name: str) -> int:
        return int(layer_name in self._has_builtin_call)


def _parse_functional(config: dict, keras_major: int, source: str) -> ModelSpec:
    entries = config.get("layers", [])
    layers = [_with_layer_context(source, e, lambda e=e: _layer_spec(e, keras_major, source))
              for e in entries]
    indexing = NodeIndexing(entries, keras_major)
    for layer, entry in zip(layers, entries):
        def parse_nodes(layer=layer, entry=entry):
            return [nodes.parse_node(n, layer.class_name, indexing.in_nodes)
                    for n in entry.get("inbound_nodes") or []]
        layer.inbound_nodes = _with_layer_context(source, entry, parse_nodes)
    try:
        inputs, input_keys = nodes.flatten_endpoints(config.get("input_layers", []),
                                                     indexing.in_endpoints)
        outputs, output_keys = nodes.flatten_endpoints(config.get("output_layers", []),
                                                       indexing.in_endpoints)
    except (ValueError, TypeError, IndexError) as exc:
        raise ModelFileError(f"{source}: malformed input_layers/output_layers of model "
                             f"{config.get('name')!r}: {exc}") from exc
    spec = ModelSpec(kind="Functional", name=config.get("name", "functional"), layers=layers,
                     inputs=inputs, outputs=outputs, keras_major=keras_major, source=source,
                     input_keys=input_keys, output_keys=output_keys)
    _check_references(spec)
    by_name = {layer.name: layer for layer in layers}
    for ref in inputs:
        layer = by_name[ref.layer]
        if layer.class_name == "InputLayer":
            spec.input_shapes.append(layer.config["batch_shape"])
            spec.input_dtypes.append(layer.config["dtype"])
        else:
            spec.input_shapes.append(None)
            spec.input_dtypes.append(layer.config.get("dtype", "float32"))
    return spec


def _iter_refs(value):
    if isinstance(value, TensorRef):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _iter_refs(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _iter_refs(v)


def _check_reference(spec: ModelSpec, by_name: dict, ref: TensorRef, where: str) -> None:
    layer = by_name.get(ref.layer)
    if layer is None:
        raise ModelFileError(f"{spec.source}: {where} refers to layer {ref.layer!r}, which model "
                             f"{spec.name!r} does not have")
    calls = max(len(layer.inbound_nodes), 1)     # an InputLayer has one implicit call
    if not 0 <= ref.node_index < calls:
        raise ModelFileError(f"{spec.source}: {where} refers to call {ref.node_index} of layer "
                             f"{ref.layer!r}, which is called {len(layer.inbound_nodes)} time(s) "
                             f"in model {spec.name!r}")


def _check_references(spec: ModelSpec) -> None:
    by_name = {layer.name: layer for layer in spec.layers}
    if len(by_name) != len(spec.layers):
        raise ModelFileError(f"{spec.source}: model {spec.name!r} has two layers with one name")
    for layer in spec.layers:
        for node in layer.inbound_nodes:
            for ref in _iter_refs([node.args, node.kwargs]):
                _check_reference(spec, by_name, ref, f"the input of layer {layer.name!r}")
    for ref in spec.inputs:
        _check_reference(spec, by_name, ref, "the model's inputs")
    for ref in spec.outputs:
        _check_reference(spec, by_name, ref, "the model's outputs")


def _with_layer_context(source: str, entry, parse):
    """Run `parse`; a malformed entry becomes a ModelFileError that names the layer."""
    try:
        return parse()
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        name = entry.get("name") if isinstance(entry, dict) else None
        if name is None and isinstance(entry, dict) and isinstance(entry.get("config"), dict):
            name = entry["config"].get("name")
        raise ModelFileError(f"{source}: malformed config of layer {name!r}: "
                             f"{type(exc).__name__}: {exc}") from exc


def _parse_model(class_name: str, config, keras_major: int, source: str) -> ModelSpec:
    if class_name == "Sequential":
        return _parse_sequential(config, keras_major, source)
    if not isinstance(config, dict):
        raise ModelFileError(f"{source}: malformed {class_name} config")
    return _parse_functional(config, keras_major, source)


def model_spec_from_config(model_json: Any, keras_major: int, source: str) -> ModelSpec:
    """A ModelSpec (no weights yet) from a `{"class_name": ..., "config": ...}` model config.

    The config is first checked not to nest deeper than json_text.MAX_JSON_DEPTH: everything
    below walks it recursively."""
    check_nesting(model_json, source, "the model config")
    if not isinstance(model_json, dict) or "config" not in model_json:
        raise ModelFileError(f"{source}: the model config is not a Keras model description")
    class_name = model_json.get("class_name")
    if not _is_nested_model(class_name, model_json["config"]):
        raise ModelFileError(f"{source}: the file describes a {class_name!r}, not a Sequential or "
                             "Functional model (subclassed models cannot be read)")
    return _parse_model(class_name, model_json["config"], keras_major, source)
