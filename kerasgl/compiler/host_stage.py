"""The host stage: layers that run on the CPU with numpy before the upload (strings do not live
on a GPU; layers/preprocessing/lookup.py's StringLookup, IntegerLookup, TextVectorization, and
layers/preprocessing/hashing.py's Hashing, HashedCrossing).

At load, `split(graph)` cuts the graph after the host layers (`runs_on_host = True`): each must
be called on model inputs or on other host layers' outputs (refused at load otherwise, as is a
string reaching a GPU layer), and their outputs become the graph's inputs (their nodes stay in
the graph, fed, never run). The model keeps its own inputs (`model_inputs`: strings too);
predict runs `run` on each batch's numpy arrays before the upload, so a TextVectorization
without output_sequence_length pads each batch to its longest text, as Keras's predict does. The
vocabulary of an adapted layer is the `.keras` archive's asset
`assets/<layer path>/vocabulary.txt`.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputTypeError, ShapeError, UnsupportedLayerError
from .arguments import format_shape, map_refs, refs_in
from .graph import TensorSpec, unsupported_error
from .layer_errors import about_layer


def runs_on_host(layer) -> bool:
    return bool(getattr(layer, "runs_on_host", False))


class HostStage:
    def __init__(self, input_refs, input_specs, nodes, device_refs):
        self.input_refs, self.input_specs = input_refs, input_specs
        self.nodes, self.device_refs = nodes, device_refs

    def run(self, arrays: list) -> list:
        values = dict(zip(self.input_refs, arrays))
        for node in self.nodes:
            args = map_refs(node.args, values.__getitem__)
            values[node.output_ref()] = np.ascontiguousarray(node.layer.host_call(*args))
        return [values[ref] for ref in self.device_refs]


def split(graph, read_asset=None) -> None:
    """Cut `graph` after its host layers (see the module's text); UnsupportedLayerError naming
    the file and layer for a host layer elsewhere, or a string input read by a GPU layer.
    read_asset(spec, layer name, file name) -> bytes or None: a .keras archive's layer assets."""
    graph.host_stage = None
    problems: list[str] = []
    for layer in graph.layers.values():
        found = nested_host_layer(layer)
        if found is not None:
            problems.append(f"'{found.name}' ({found.class_name}): it runs on the CPU before the "
                            f"upload, and cannot run inside the nested model '{layer.name}'")
    specs = graph.input_specs
    dtypes = {ref: spec.dtype for ref, spec in zip(graph.input_refs, specs)}
    shapes = {ref: spec.shape for ref, spec in zip(graph.input_refs, specs)}
    host_nodes = []
    for node in graph.nodes:
        layer = node.layer
        if not runs_on_host(layer):
            strings = [r for r in node.refs if dtypes.get(r) == "string"]
            if strings and node.refs:
                problems.append(f"'{layer.name}' ({layer.class_name}): it runs on the GPU, which "
                                f"cannot hold the strings of '{strings[0].layer}'")
            continue
        where = f"'{layer.name}' ({layer.class_name})"
        outside = [r for r in node.refs if r not in dtypes]
        if outside or not node.refs or len(node.args) != 1 or set(node.refs) - set(
                refs_in(node.args)):
            called = f"the output of '{outside[0].layer}'" if outside else \
                "tensors it does not take"
            problems.append(f"{where}: it runs on the CPU before the upload, so it must be called "
                            f"on model inputs or on other such layers' outputs; it is "
                            f"called on {called}")
            continue
        if len(graph.nodes_of(layer.name)) > 1:
            problems.append(f"{where}: a host layer called more than once (shared)")
            continue
        try:
            with about_layer(layer.name, layer.class_name, reading_config=True):
                if layer.needs_asset_vocabulary:
                    lines = asset_vocabulary(graph, layer, read_asset)
                    if lines is not None:
                        layer.set_asset_vocabulary(lines)
                shape, dtype = layer.host_output(map_refs(node.args[0],
                                                          lambda r: (shapes[r], dtypes[r])))
        except UnsupportedLayerError as exc:
            problems.append(str(exc))
            continue
        ref = node.output_ref()
        shapes[ref], dtypes[ref] = shape, dtype
        # The rest of the graph reads this output as one of its inputs (Graph.input_specs).
        layer.batch_shape, layer.dtype = shape, dtype
        host_nodes.append(node)
    for ref in graph.output_refs:
        if dtypes.get(ref) == "string":
            problems.append(f"'{ref.layer}': a model output of strings, which kerasgl's outputs "
                            "cannot hold")
    if problems:
        raise unsupported_error(graph.spec, problems)
    if not host_nodes:
        return
    # The GPU part's inputs: the model inputs GPU layers read, and every host layer's output
    # (so that predict(outputs=...) can name one). The host nodes stay in graph.nodes for
    # summary() and shape inference; execution never reaches them: their outputs are fed.
    read = {r for node in graph.nodes if not runs_on_host(node.layer) for r in node.refs}
    device_refs = [ref for ref in graph.input_refs if ref in read or ref in graph.output_refs]
    device_refs += [node.output_ref() for node in host_nodes]
    graph.host_stage = HostStage(list(graph.input_refs), specs, host_nodes, device_refs)
    graph.input_refs = device_refs


def nested_host_layer(layer):
    """The first host layer inside a model nested as `layer` (at any depth), or None."""
    inner = getattr(layer, "nested_graph", None)
    for sub in (inner.layers.values() if inner is not None else ()):
        found = sub if runs_on_host(sub) else nested_host_layer(sub)
        if found is not None:
            return found
    return None


def asset_vocabulary(graph, layer, read_asset) -> list[str] | None:
    """The lines of an adapted layer's vocabulary asset (Keras's IndexLookup.load_assets), or
    None where the file has none. read_asset: saving.assets.layer_asset, handed down."""
    data = read_asset(graph.spec, layer.name, "vocabulary.txt") if read_asset else None
    if data is None:
        return None
    lines = data.decode("utf-8").splitlines()
    while lines and lines[-1] == "":
        lines.pop()
    return lines


# -- hooks for model.py and feeding.py --------------------------------------------------------
def model_inputs(graph) -> list[TensorSpec]:
    """The model's own inputs (strings too), whether or not host layers read them."""
    stage = getattr(graph, "host_stage", None)
    return graph.input_specs if stage is None else list(stage.input_specs)


def run(graph, arrays: list) -> list:
    """The GPU part's inputs for one batch of the model's inputs."""
    stage = getattr(graph, "host_stage", None)
    return arrays if stage is None else stage.run(arrays)


def refuse_tensors(graph, model_name: str, call: str | None = None) -> None:
    """GPU tensors in (predict with Tensors, or model(x), whose inputs are uploaded first) cannot
    feed layers that run on the CPU before the upload."""
    if getattr(graph, "host_stage", None) is not None:
        raise InputTypeError(f"Model '{model_name}' runs its first layers on the CPU (lookup and "
                             "text layers): " + (f"{call} takes GPU tensors; call predict() with "
                                                 "numpy arrays instead." if call else
                                                 "pass numpy arrays, not kerasgl Tensors."))


def concatenate(parts: list, model_name: str) -> np.ndarray:
    """The batches' outputs stacked. A TextVectorization without output_sequence_length pads each
    batch to its longest text, so sequence outputs of batches may differ in length, where Keras's
    predict returns a ragged tensor: a ShapeError that says so, not numpy's error."""
    if len({p.shape[1:] for p in parts}) > 1:
        raise ShapeError(f"Model '{model_name}': its batches' outputs have different shapes "
                         f"{sorted({p.shape[1:] for p in parts})} (a TextVectorization without "
                         "output_sequence_length pads each batch to its longest text; Keras "
                         "returns a ragged tensor). Pass batch_size= the number of samples, or "
                         "save the layer with output_sequence_length.")
    return np.concatenate(parts, axis=0)


def check_strings(value, spec: TensorSpec, model_name: str) -> np.ndarray:
    """A string input as an object array of UTF-8 bytes (TensorFlow's view of strings)."""
    where = f"Model '{model_name}' input '{spec.name}'"
    try:
        array = np.asarray(value)
    except ValueError as exc:
        raise ShapeError(f"{where}: expected shape {format_shape(spec.shape)}, received ragged "
                         f"nested lists ({exc}).") from None
    if array.dtype.kind == "U":
        array = np.char.encode(array, "utf-8").astype(object)
    elif array.dtype.kind == "S":
        array = array.astype(object)
    elif array.dtype.kind == "O":
        flat = array.reshape(-1).tolist()
        if not all(isinstance(v, (str, bytes)) for v in flat):
            raise InputTypeError(f"{where}: expected strings of shape "
                                 f"{format_shape(spec.shape)}, received other objects.")
        array = np.array([v.encode("utf-8") if isinstance(v, str) else v for v in flat],
                         object).reshape(array.shape)
    else:
        raise InputTypeError(f"{where}: expected strings of shape {format_shape(spec.shape)}, "
                             f"received {array.dtype} data of shape {format_shape(array.shape)}.")
    expected = spec.shape
    if len(array.shape) != len(expected) or any(
            e is not None and e != r for e, r in zip(expected[1:], array.shape[1:])):
        raise ShapeError(f"{where}: expected shape {format_shape(expected)}, received shape "
                         f"{format_shape(array.shape)}.")
    return array
