"""A model's graph: layers built from a ModelSpec, their calls (nodes) in topological order,
shape inference at load, and execution that frees each intermediate tensor after its last use.

Sequential and Functional models become the same thing here: a list of nodes, each one call of a
layer on TensorRefs. A layer called several times (shared) has several nodes and one set of
weights; a model nested as a layer is a NestedModel whose call runs its own Graph.
"""
from __future__ import annotations

import inspect

from collections import Counter
from dataclasses import dataclass, field

from . import constants, fusion, masks as mask_rules
from .layer_errors import about_layer
from .arguments import format_shape, is_shape, map_refs, output_list, refs_in  # noqa: F401
from ..errors import ModelFileError, ShapeError, UnsupportedLayerError
from ..layers import LAYER_CLASSES
from ..layers.custom import custom_layer as custom_layers
from ..layers.base import Layer, Weightless, declare_file_rules
from ..layers.core.input_layer import InputLayer
from ..layers.typed_shapes import dtype_of, typed
from ..keras_ops.node import OP_CLASSES, OpNode, Symbolic, is_op_module
from ..layers.refusals import REFUSED_LAYERS, REFUSED_OPS
from ..ops import half_activations
from ..ops.typed import bools_as_float
from ..plans.recorder import current_layer
from ..saving.spec import LayerSpec, ModelSpec, TensorRef
from ..tensors.tensor import Tensor, view

# Call arguments that do not change inference results: dropped before a layer is called.
IGNORED_CALL_KWARGS = ("training",)
MODEL_CLASS_NAMES = ("Sequential", "Functional", "Model")

LAMBDA_EXPLANATION = (
    "a Lambda layer stores Python code (marshalled bytecode); kerasgl never deserialises or runs "
    "code from a model file. Rewrite the function as built-in layers or keras.ops calls, or as a "
    "kerasgl layer class")
# Layers refused at load for the reason above own no weights: a file giving them some is damaged.
declare_file_rules(("Lambda",), Weightless)


# -------------------------------------------------------------------------------------------------
# Nodes and the graph
# -------------------------------------------------------------------------------------------------
@dataclass
class Node:
    """One call of a layer: `layer.call(*args, **kwargs)` with TensorRef leaves resolved."""
    layer: Layer
    index: int
    args: list
    kwargs: dict
    refs: list = field(default_factory=list)          # TensorRefs read, with repetition
    output_shapes: list = field(default_factory=list)  # from the latest shape inference
    keras_refs: list | None = None    # the refs of the Keras file, where a fusion changed `refs`

    @property
    def key(self) -> tuple:
        return (self.layer.name, self.index)

    def output_ref(self, tensor_index: int = 0) -> TensorRef:
        return TensorRef(self.layer.name, self.index, tensor_index)


@dataclass(frozen=True)
class TensorSpec:
    """What a model input or output looks like: its name, shape (None: any) and dtype."""
    name: str
    shape: tuple
    dtype: str = "float32"

    def __repr__(self) -> str:
        return f"TensorSpec(name={self.name!r}, shape={format_shape(self.shape)}, dtype={self.dtype!r})"


class Graph:
    def __init__(self, spec: ModelSpec, layers: dict, nodes: list, input_refs: list,
                 output_refs: list, listed_layers: list):
        self.spec = spec
        self.name, self.kind, self.source = spec.name, spec.kind, spec.source
        self.layers: dict[str, Layer] = layers          # every layer, InputLayers included
        self.listed_layers: list[Layer] = listed_layers  # as keras.Model.layers lists them
        self.nodes: list[Node] = nodes                   # topological order
        self.input_refs: list[TensorRef] = input_refs
        self.output_refs: list[TensorRef] = output_refs
        self.shapes: dict[TensorRef, tuple] = {}
        self.mask_plan = None        # set at load by masks.prepare_graph
        self._by_key = {node.key: node for node in nodes}

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: ModelSpec, problems: list[str] | None = None) -> "Graph":
        """Make every layer (collecting unsupported ones in `problems`; raises when this is the
        outermost call and any were found) and order the calls. Uploads nothing."""
        outermost = problems is None
        problems = [] if outermost else problems
        made: dict[str, Layer] = {}
        for layer_spec in spec.layers:
            if layer_spec.name in made:
                raise ModelFileError(f"{spec.source}: model '{spec.name}' has two layers named "
                                     f"'{layer_spec.name}'.")
            layer = make_layer(layer_spec, spec.keras_major, problems)
            if layer is not None:
                made[layer_spec.name] = layer
        if outermost and problems:
            for layer in made.values():
                layer.dispose()
            raise unsupported_error(spec, problems)
        if len(made) < len(spec.layers):   # only inside a nested model: the caller raises
            return cls(spec, made, [], [], [], list(made.values()))
        if spec.kind == "Sequential":
            return cls._sequential(spec, made)
        return cls._functional(spec, made)

    @classmethod
    def _sequential(cls, spec: ModelSpec, made: dict) -> "Graph":
        layers = list(made.values())
        if layers and isinstance(layers[0], InputLayer):
            input_layer, body = layers[0], layers[1:]
        else:
            input_layer, body = synthetic_input(spec, layers), layers
            made = {input_layer.name: input_layer, **made}
        previous = TensorRef(input_layer.name)
        nodes = [Node(input_layer, 0, [], {})]
        for layer in body:
            nodes.append(Node(layer, 0, [previous], {}, [previous]))
            previous = TensorRef(layer.name)
        # keras.Sequential.layers leaves out the InputLayer.
        return cls(spec, made, nodes, [TensorRef(input_layer.name)], [previous], body)

    @classmethod
    def _functional(cls, spec: ModelSpec, made: dict) -> "Graph":
        nodes = []
        for layer_spec in spec.layers:
            layer = made[layer_spec.name]
            if isinstance(layer, InputLayer):
                nodes.append(Node(layer, 0, [], {}))
                continue
            for index, node_spec in enumerate(layer_spec.inbound_nodes):
                kwargs = dict(node_spec.kwargs or {})
                for key in IGNORED_CALL_KWARGS:
                    kwargs.pop(key, None)
                if kwargs.get("mask", 0) is None:
                    kwargs.pop("mask")        # masks.py decides who gets a mask tensor
                args = list(node_spec.args or [])
                nodes.append(Node(layer, index, args, kwargs, refs_in(args) + refs_in(kwargs)))
        if not spec.inputs or not spec.outputs:
            raise ModelFileError(f"{spec.source}: functional model '{spec.name}' lists no inputs "
                                 "or no outputs.")
        for ref in spec.inputs:       # a model's inputs are its InputLayers' tensors, nothing else
            if ref.layer in made and not isinstance(made[ref.layer], InputLayer):
                raise ModelFileError(
                    f"{spec.source}: functional model '{spec.name}' lists layer '{ref.layer}' "
                    f"({made[ref.layer].class_name}) among its inputs; a model's inputs are "
                    "InputLayers.")
        nodes = constants.lift(nodes, made, Node, spec.keras_major)   # arrays -> Constant nodes
        ordered = topological_order(nodes, spec)
        # keras.Model.layers lists layers, not the operations recorded on symbolic tensors.
        listed = [layer for layer in made.values()
                  if not isinstance(layer, (OpNode, constants.Constant))]
        return cls(spec, made, ordered, list(spec.inputs), list(spec.outputs), listed)

    # -- what goes in and out ---------------------------------------------------------------------
    @property
    def input_specs(self) -> list[TensorSpec]:
        specs = []
        for i, ref in enumerate(self.input_refs):
            layer = self.layers.get(ref.layer)
            shape = self.shapes.get(ref) or getattr(layer, "batch_shape", None)
            if shape is None and i < len(self.spec.input_shapes):
                shape = tuple(self.spec.input_shapes[i])
            dtype = getattr(layer, "dtype", "float32")
            specs.append(TensorSpec(ref.layer, tuple(shape), dtype))
        return specs

    @property
    def output_specs(self) -> list[TensorSpec]:
        return [TensorSpec(ref.layer, self.shapes.get(ref, ()), dtype_of(self.shapes.get(ref)))
                for ref in self.output_refs]

    def node(self, layer_name: str, index: int = 0) -> Node:
        return self._by_key[(layer_name, index)]

    def nodes_of(self, layer_name: str) -> list[Node]:
        return [n for n in self.nodes if n.layer.name == layer_name]

    # -- shapes and build ---------------------------------------------------------------------
    def infer(self, input_shapes=None) -> list[tuple]:
        """Propagate shapes from the inputs through every node, building each layer the first
        time it is called (weights upload in build). Returns the output shapes."""
        if input_shapes is None:
            input_shapes = [spec.shape for spec in self.input_specs]
        if len(input_shapes) != len(self.input_refs):
            raise ShapeError(f"Model '{self.name}' expects {len(self.input_refs)} input(s), "
                             f"received {len(input_shapes)}.")
        fusion.fuse_once(self, input_shapes)    # before any build: folding changes the weights
        dtypes = [getattr(self.layers.get(ref.layer), "dtype", "float32") for ref in self.input_refs]
        shapes = {ref: typed(shape, dtype)     # op nodes read the inputs' dtypes (layers/typed_shapes.py)
                  for ref, shape, dtype in zip(self.input_refs, input_shapes, dtypes)}
        for node in self.nodes:
            if node.output_ref() in shapes and not node.refs:
                node.output_shapes = [shapes[node.output_ref()]]
                continue
            if isinstance(node.layer, InputLayer) and not node.refs:
                node.output_shapes = [node.layer.batch_shape]   # an InputLayer no one feeds
            else:
                node.output_shapes = infer_node(node, shapes)
            for i, shape in enumerate(node.output_shapes):
                shapes[node.output_ref(i)] = shape
        for ref in self.output_refs:
            if ref not in shapes:
                raise ModelFileError(f"{self.source}: model '{self.name}' output {ref} is not "
                                     "produced by any layer call.")
        self.shapes = shapes
        return [shapes[ref] for ref in self.output_refs]

    # -- running ------------------------------------------------------------------------------------
    def needed_nodes(self, wanted: list[TensorRef]) -> list[Node]:
        """The nodes that `wanted` depends on (an inner layer's output needs only its ancestors)."""
        fusion.check_wanted(self, wanted)       # values fusion no longer computes are refused
        needed, stack = set(), [(ref.layer, ref.node_index) for ref in wanted]
        fed = {(ref.layer, ref.node_index) for ref in self.input_refs}
        while stack:
            key = stack.pop()
            if key in needed or key in fed:
                continue
            if key not in self._by_key:
                raise ValueError(f"Model '{self.name}' has no layer call {key[0]!r} #{key[1]}.")
            needed.add(key)
            stack.extend((ref.layer, ref.node_index) for ref in self._by_key[key].refs)
        return [node for node in self.nodes if node.key in needed]

    def execute(self, inputs: list[Tensor], wanted: list[TensorRef] | None = None) -> list[Tensor]:
        """Run the graph on input tensors (owned by the caller, never disposed here). Returns one
        new tensor per wanted ref; every intermediate is disposed as soon as its last consumer has
        run, and everything made here is disposed if a layer raises."""
        wanted = list(self.output_refs if wanted is None else wanted)
        nodes = self.needed_nodes(wanted)
        remaining = Counter(ref for node in nodes for ref in node.refs)
        keep = set(wanted)
        values: dict[TensorRef, Tensor] = {}
        caller_owned = {id(t) for t in inputs}
        for ref, tensor in zip(self.input_refs, inputs):
            values[ref] = tensor
        masks: dict = {}       # propagated Keras masks (masks.MaskPlan), freed at the end
        try:
            for node in nodes:
                args = map_refs(node.args, values.__getitem__)
                kwargs = map_refs(node.kwargs, values.__getitem__)
                converted: list = []      # bool tensors as float32 0 / 1 for layers (typed.py)
                if not isinstance(node.layer, (OpNode, NestedModel)):
                    args, kwargs = bools_as_float((args, kwargs), converted)
                if self.mask_plan is not None:
                    kwargs = self.mask_plan.prepare(node, kwargs, masks)
                # The layer running, for a recording plan's messages (plans/recorder.py).
                outer, current_layer.name = current_layer.name, node.layer.name
                try:
                    result = node.layer.call(*args, **kwargs)
                except BaseException:
                    for tensor in converted:
                        tensor.dispose()
                    raise
                finally:
                    current_layer.name = outer
                outputs = list(result) if isinstance(result, (list, tuple)) else [result]
                live = {id(t) for t in values.values()}
                as_kept: dict = {}
                for i, tensor in enumerate(outputs):
                    if not isinstance(tensor, Tensor):
                        raise TypeError(f"Layer '{node.layer.name}' returned {type(tensor).__name__}, "
                                        "not a kerasgl Tensor.")
                    if id(tensor) in live:
                        # An identity layer returned its input: give this value its own handle
                        # on the shared storage so each value can be freed independently.
                        tensor = view(tensor, tensor.shape)
                    # Kept as halves between layers in a float16-activation model's run (once
                    # for a tensor a layer returns twice).
                    if id(tensor) not in as_kept:
                        as_kept[id(tensor)] = half_activations.as_activation(tensor)
                    tensor = outputs[i] = as_kept[id(tensor)]
                    ref = node.output_ref(i)
                    if ref in keep or remaining[ref] > 0:
                        values[ref] = tensor
                        live.add(id(tensor))
                    else:
                        tensor.dispose()        # an output of a multi-output layer nobody reads
                if self.mask_plan is not None:
                    self.mask_plan.record(node, args, outputs, masks)
                for tensor in converted:
                    if all(tensor is not out for out in outputs):
                        tensor.dispose()
                for ref in node.refs:
                    remaining[ref] -= 1
                    if remaining[ref] == 0 and ref not in keep:
                        tensor = values.pop(ref)
                        if id(tensor) not in caller_owned:
                            tensor.dispose()
            results, handed = [], set()
            for ref in wanted:
                tensor = values[ref]
                if id(tensor) in caller_owned or id(tensor) in handed:
                    tensor = view(tensor, tensor.shape)   # the caller gets a tensor of its own
                handed.add(id(tensor))
                results.append(tensor)
            return results
        except BaseException:
            for tensor in values.values():
                if id(tensor) not in caller_owned:
                    tensor.dispose()
            raise
        finally:
            mask_rules.release(masks)

    # -- weights ------------------------------------------------------------------------------------
    def unique_layers(self) -> list[Layer]:
        return list(self.layers.values())

    @property
    def param_count(self) -> int:
        return sum(layer.param_count for layer in self.layers.values())

    def dispose(self) -> None:
        for layer in self.layers.values():
            layer.dispose()


# -------------------------------------------------------------------------------------------------
# Pieces
# -------------------------------------------------------------------------------------------------
def make_layer(spec: LayerSpec, keras_major: int, problems: list[str]) -> Layer | None:
    """The kerasgl layer for a LayerSpec, or None after adding why it cannot run to `problems`."""
    where = f"'{spec.name}' ({spec.class_name})"
    if spec.class_name == "Lambda":
        problems.append(f"{where}: {LAMBDA_EXPLANATION}.")
        return None
    if spec.inner is not None:
        cls = NestedModel
    elif is_op_module(spec.module):
        cls = OP_CLASSES.get(spec.class_name)
        if cls is None:
            reason = REFUSED_OPS.get(spec.class_name)
            problems.append(f"{where}: the operation {spec.module}.{spec.class_name} is not "
                            f"supported" + (f": {reason}." if reason else "."))
            return None
    else:
        # The user's classes (load_model's custom_objects) come first, as in Keras.
        cls = custom_layers.lookup(spec.class_name) or LAYER_CLASSES.get(spec.class_name)
        if cls is None:
            if spec.class_name in MODEL_CLASS_NAMES:
                problems.append(f"{where}: a nested model without its configuration.")
            elif spec.class_name in REFUSED_LAYERS:
                problems.append(f"{where}: layer class {spec.class_name} is not supported: "
                                f"{REFUSED_LAYERS[spec.class_name]}.")
            else:
                problems.append(f"{where}: layer class {spec.class_name} is not supported; "
                                f"{custom_layers.unknown_class_advice(spec.class_name)}.")
            return None
    try:
        if cls is NestedModel:
            return NestedModel(spec, keras_major, problems)
        with about_layer(spec.name, spec.class_name, reading_config=True):
            return cls(spec, keras_major)
    except UnsupportedLayerError as exc:
        problems.append(str(exc))
        return None


def unsupported_error(spec: ModelSpec, problems: list[str]) -> UnsupportedLayerError:
    lines = "\n".join(f"  - {p}" for p in problems)
    return UnsupportedLayerError(
        f"{spec.source}: model '{spec.name}' has {len(problems)} layer(s) kerasgl cannot run:\n{lines}")


def synthetic_input(spec: ModelSpec, layers: list) -> InputLayer:
    """A Sequential saved without an InputLayer: its input shape is in the spec or on its first
    layer (Keras 2's batch_input_shape)."""
    shape = spec.input_shapes[0] if spec.input_shapes else None
    dtype = spec.input_dtypes[0] if spec.input_dtypes else "float32"
    if shape is None and layers:
        config = layers[0].config or {}
        shape = config.get("batch_shape", config.get("batch_input_shape"))
        dtype = config.get("dtype", dtype) if isinstance(config.get("dtype"), str) else dtype
    if shape is None:
        raise ModelFileError(f"{spec.source}: Sequential model '{spec.name}' was never built, so "
                             "the file does not say its input shape.")
    return InputLayer(LayerSpec("InputLayer", f"{spec.name}_input",
                                {"batch_shape": list(shape), "dtype": dtype}), spec.keras_major)


def topological_order(nodes: list[Node], spec: ModelSpec) -> list[Node]:
    """Kahn's algorithm, stable in file order; a reference to a missing call is a file error."""
    by_key = {node.key: node for node in nodes}
    waiting = {}
    users: dict[tuple, list] = {}
    for node in nodes:
        deps = {(ref.layer, ref.node_index) for ref in node.refs}
        for dep in deps:
            if dep not in by_key:
                raise ModelFileError(
                    f"{spec.source}: layer '{node.layer.name}' is called on output "
                    f"{dep[1]} of layer '{dep[0]}', which the model does not have.")
            users.setdefault(dep, []).append(node)
        waiting[node.key] = len(deps)
    position = {node.key: i for i, node in enumerate(nodes)}
    ready = sorted((node for node in nodes if waiting[node.key] == 0), key=lambda n: position[n.key])
    ordered = []
    while ready:
        node = ready.pop(0)
        ordered.append(node)
        for user in users.get(node.key, []):
            waiting[user.key] -= 1
            if waiting[user.key] == 0:
                ready.append(user)
        ready.sort(key=lambda n: position[n.key])
    if len(ordered) != len(nodes):
        stuck = sorted({n.layer.name for n in nodes if waiting[n.key] > 0})
        raise ModelFileError(f"{spec.source}: the calls of layers {stuck} form a cycle.")
    return ordered


def infer_node(node: Node, shapes: dict) -> list[tuple]:
    layer = node.layer
    with about_layer(layer.name, getattr(layer, "class_name", type(layer).__name__)):
        return _infer_node(node, layer, shapes)


def _infer_node(node: Node, layer, shapes: dict) -> list[tuple]:
    def shape_of(ref):
        # A reference to a tensor its layer never made (an output index it does not have).
        if ref not in shapes:
            raise ModelFileError(f"its call #{node.index} reads output {ref.tensor_index} of call "
                                 f"#{ref.node_index} of layer '{ref.layer}', which that call "
                                 "does not have.")
        return shapes[ref]

    if isinstance(layer, OpNode):
        symbolic = lambda ref: Symbolic(shape_of(ref))  # noqa: E731
        layer.built = True
        return output_list(layer.node_output_shape(map_refs(node.args, symbolic),
                                                   map_refs(node.kwargs, symbolic)))
    positional = [map_refs(arg, shape_of) for arg in node.args if refs_in(arg)]
    # Keras 2 stores every call argument after the first by keyword (`mha(q, v)` is saved as
    # args=[q], kwargs={"value": v}): tensor keywords reach the layers that declare them.
    keyword = {key: map_refs(value, shape_of) for key, value in node.kwargs.items()
               if refs_in(value) and _accepts_keyword(layer.compute_output_shape, key)}
    # Plain call options a layer's shapes depend on (ReversibleEmbedding's reverse=), by its word.
    keyword.update({key: value for key, value in node.kwargs.items()
                    if key in getattr(layer, "shape_keywords", ())})
    try:   # a call saved with tensors the layer does not take, or without one it needs
        inspect.signature(layer.compute_output_shape).bind(*positional, **keyword)
    except TypeError as exc:
        raise ModelFileError(f"its call #{node.index} passes {len(positional)} tensor argument(s)"
                             f"{' and ' + ', '.join(sorted(keyword)) if keyword else ''}, which "
                             f"it does not take ({exc}).") from None
    if not layer.built:
        layer.build(*positional, **{k: v for k, v in keyword.items()
                                    if _accepts_keyword(layer.build, k)})
        layer.built = True
    return output_list(layer.compute_output_shape(*positional, **keyword))


def _accepts_keyword(method, name: str) -> bool:
    parameters = inspect.signature(method).parameters
    return name in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


class NestedModel(Layer):
    """A Sequential or Functional model used as a layer: its call runs its own graph."""
    # Keras passes a model its input's mask (Functional.call has `mask`) and its layers use it;
    # kerasgl does not carry masks into nested models: mask_behaviour stays undeclared, so a mask
    # reaching one is refused at load (compiler/masks.py).
    keras_call_takes_mask = True

    def __init__(self, spec: LayerSpec, keras_major: int, problems: list[str]):
        super().__init__(spec, keras_major)
        self.graph = Graph.from_spec(spec.inner, problems)

    @property
    def nested_graph(self):
        return self.graph

    @property
    def shaders(self):
        names = []
        for layer in self.graph.layers.values():
            names.extend(s for s in layer.shaders if s not in names)
        return tuple(names)

    def _as_list(self, value):
        if len(self.graph.input_refs) == 1:
            return [value]
        if isinstance(value, dict):
            return [value[ref.layer] for ref in self.graph.input_refs]
        return list(value)

    def compute_output_shape(self, input_shape):
        shapes = self.graph.infer(self._as_list(input_shape))
        return shapes[0] if len(shapes) == 1 else shapes

    def build(self, input_shape) -> None:
        self.built = True      # the inner layers are built by compute_output_shape's inference

    def call(self, inputs, **kwargs):
        outputs = self.graph.execute(self._as_list(inputs))
        return outputs[0] if len(outputs) == 1 else outputs

    @property
    def param_count(self) -> int:
        return self.graph.param_count

    def dispose(self) -> None:
        self.graph.dispose()
