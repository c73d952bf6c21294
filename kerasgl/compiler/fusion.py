"""Load-time fusions: fewer dispatches per predict, same results up to float rounding.

Run once per graph, at the start of its shape inference (before any layer is built, so folding
changes the weights that build() packs and uploads). These patterns, each applied through a hook
of the layer that takes the work over, which refuses (returns False, changing nothing) when the
result would not be exact:

- conv / dense -> BatchNormalization: the BN's per-channel scale and shift folded into the
  kernel and bias (`fold_channel_affine`); the BN's own weights are never uploaded.
- conv / dense / merge (Add, Subtract, ... and keras.ops binary op nodes) -> pointwise activation
  (Activation, ReLU, LeakyReLU, ELU, ThresholdedReLU, keras.ops.relu & co.): the activation
  runs in the producer's epilogue (`fuse_activation`). Softmax is not pointwise and stays.
- ZeroPadding -> convolution or Max/AveragePooling with padding="valid": the convolution reads
  the padding as its own, the pooling lets the padding's zeros take part in its windows
  (`absorb_zero_padding`).
- Conv2D (+ its chain) -> 2x2 stride-2 valid MaxPooling2D, after a monotone activation: the
  convolution computes whole windows and writes their max (`absorb_max_pool`).
- a residual Add (+ activation) -> the epilogue of the Conv2D producing one of its inputs, when
  the other input exists before that convolution runs (`_add_into_producer`).
Chains compose: conv -> BN -> ReLU becomes one convolution.

Which layer can take which work over is the layer's declaration: the fusion protocol of
kerasgl/layers/base.py (fuse_activation, fold_channel_affine, absorb_zero_padding,
absorb_max_pool, absorb_add, fused_with_activation) and what a layer computes (as_pointwise,
as_channel_affine, zero_padding, pooling, returns_its_input, adds_inputs), each declining by
default.

The graph keeps every node; a fused-away node is re-bound to `FusedAway`, which hands its input
on as its output (a view: no dispatch, no copy), so names, shapes and summary rows stay as Keras
has them. A fusion is made only when each intermediate value it changes is read by the next
layer of the chain alone and is not a model output. Those changed values (the producer's own
output, and that of every fused layer but the last) are no longer computed: asking predict for
one (`outputs=["bn1"]`) raises FusedOutputError naming the fusion. Load the model inside
`with kerasgl.compiler.fusion.disabled():` (or with KERASGL_FUSION=0 in the environment) to read them.

No fusion where a Keras mask flows (a graph with Embedding(mask_zero) or Masking, or explicit
mask arguments): masks are propagated node by node, and those graphs gain little from fusing.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

from .. import settings
from ..errors import KerasGLError
from ..layers.base import MASK_FACTS, Layer
from ..layers.core.input_layer import InputLayer
from ..keras_ops.node import OpNode, Symbolic
from ..saving.spec import TensorRef
from ..tensors.tensor import view
from .arguments import map_refs, output_list, refs_in
from .masks import makes_masks

FUSION_ENV = settings.SETTINGS["fusion"].name


class FusedOutputError(KerasGLError, ValueError):
    """predict asked for a layer output that load-time fusion no longer computes."""


def enabled() -> bool:
    return settings.get("fusion")


@contextmanager
def disabled():
    """Models loaded inside run every layer as its own dispatch (every inner output readable)."""
    with settings.override(fusion=False):
        yield


# -------------------------------------------------------------------------------------------------
# What the graph remembers
# -------------------------------------------------------------------------------------------------
@dataclass
class Fusion:
    """One producer and the layers fused into it, in order (e.g. conv1 <- bn1, relu1; or a
    convolution that absorbed the ZeroPadding before it)."""
    host: str
    absorbed: list = field(default_factory=list)    # layer names
    changed: list = field(default_factory=list)     # TensorRefs whose values are no longer computed

    def describe(self) -> str:
        return f"'{self.host}' (+{', +'.join(self.absorbed)})"


class FusedAway(Layer):
    """Stands in for a layer whose work another layer now does: its output is its input (a view),
    so the graph keeps the node (names, consumers, outputs) without a dispatch. A merge of several
    inputs passes on the one at `source` (the host's output, which holds the merged value).
    Towards masks it is what its original says it is: no fusion runs where this graph makes
    masks, but the mask state of a nested model's output still passes through it."""

    def __init__(self, original: Layer, host: str, source: int | None = None):
        super().__init__(original.spec, original.keras_major)
        self.original, self.host, self.source = original, host, source
        self.weights_np = []           # the original keeps them (and counts them)
        self.shaders = ()
        for fact in MASK_FACTS:
            setattr(self, fact, getattr(original, fact))

    def masked_outputs(self) -> tuple:
        return self.original.masked_outputs()

    def refuses_mask(self, keras_major: int) -> bool:
        return self.original.refuses_mask(keras_major)

    def compute_output_shape(self, input_shape):
        # What flows; a ZeroPadding's padded shape is the host's business.
        return input_shape if self.source is None else input_shape[self.source]

    def call(self, inputs, **kwargs):
        if self.source is not None:
            inputs = inputs[self.source]
        return view(inputs, inputs.shape)

    @property
    def param_count(self) -> int:
        return 0


def fusions_of(graph) -> list[Fusion]:
    return getattr(graph, "fusions", None) or []


def check_wanted(graph, wanted) -> None:
    """Refuse, by name, a request for a value that fusion stopped computing (predict(outputs=))."""
    changed = getattr(graph, "fusion_changed", None)
    if not changed:
        return
    for ref in wanted:
        fusion = changed.get(ref)
        if fusion is not None:
            raise FusedOutputError(
                f"The output of layer '{ref.layer}' in model '{graph.name}' is not computed: at "
                f"load, kerasgl fused {fusion.describe()} into one dispatch. Load the model inside "
                "`with kerasgl.compiler.fusion.disabled():` (or with KERASGL_FUSION=0) to read it.")


# -------------------------------------------------------------------------------------------------
# The pass
# -------------------------------------------------------------------------------------------------
def fuse_once(graph, input_shapes=None) -> None:
    """Apply the fusions to `graph` (once; later calls do nothing). Call before any layer of the
    graph is built."""
    if getattr(graph, "fusion_done", False):
        return
    graph.fusion_done = True
    graph.fusions, graph.fusion_changed = [], {}
    if not enabled() or makes_masks(graph):
        return
    _Fuser(graph, input_shapes).run()


class _Fuser:
    def __init__(self, graph, input_shapes):
        self.graph = graph
        self.input_shapes = input_shapes
        self._ranks = None
        self.outputs = set(graph.output_refs)
        self.consumers: dict[TensorRef, list] = {}
        self.calls: dict[str, int] = {}
        for node in graph.nodes:
            self.calls[node.layer.name] = self.calls.get(node.layer.name, 0) + 1
            for ref in node.refs:
                self.consumers.setdefault(ref, []).append(node)
        self.producer = {node.output_ref(): node for node in graph.nodes}
        self.refs_in = refs_in

    def run(self) -> None:
        # Every layer is offered every fusion; those it does not declare decline.
        for node in list(self.graph.nodes):
            layer = node.layer
            if isinstance(layer, FusedAway) or self.calls.get(layer.name) != 1:
                continue
            self._absorb_padding(node)
            if not self._chain(node, layer):
                self._chain_op_node(node, layer)
            if node.layer.adds_inputs:
                self._add_into_producer(node)

    # -- conditions ---------------------------------------------------------------------------
    def _sole_reader(self, ref: TensorRef):
        """The node that alone reads `ref` (as its only tensor argument), when `ref` is not a
        model output; else None. Only then may `ref`'s value change."""
        readers = self.consumers.get(ref, [])
        if ref in self.outputs or len(readers) != 1:
            return None
        reader = readers[0]
        if reader.refs != [ref] or self.refs_in(reader.kwargs) or isinstance(reader.layer, FusedAway):
            return None
        return reader

    def _replace(self, node, host_name: str) -> None:
        node.layer = FusedAway(node.layer, host_name)

    def _record(self, host: str, absorbed: list, changed: list) -> None:
        fusion = next((f for f in self.graph.fusions if f.host == host), None)
        if fusion is None:
            fusion = Fusion(host)
            self.graph.fusions.append(fusion)
        fusion.absorbed.extend(absorbed)
        fusion.changed.extend(changed)
        for ref in changed:
            self.graph.fusion_changed[ref] = fusion

    # -- ZeroPadding -> convolution --------------------------------------------------------------
    def _absorb_padding(self, node) -> None:
        if len(node.refs) != 1:
            return
        pad_node = self.producer.get(node.refs[0])
        pads = None if pad_node is None else pad_node.layer.zero_padding()
        if pads is None or isinstance(pad_node.layer, FusedAway) \
                or self.calls.get(pad_node.layer.name) != 1 or len(pad_node.refs) != 1 \
                or self._sole_reader(pad_node.output_ref()) is not node:
            return
        pad = pad_node.layer
        if not node.layer.absorb_zero_padding(pads):
            return
        self._replace(pad_node, node.layer.name)
        self._record(node.layer.name, [pad.name], [pad_node.output_ref()])

    # -- producer -> BatchNormalization* -> pointwise activation ----------------------------------
    def _chain(self, node, host) -> bool:
        """Whether `host` took over any layer after it."""
        tail, absorbed, changed = node.output_ref(), [], []
        while True:
            reader = self._sole_reader(tail)
            if reader is None or self.calls.get(reader.layer.name) != 1:
                break
            layer = reader.layer
            if layer.pooling() is not None:
                # Last in a chain: nothing after a pooling folds into the convolution's epilogue.
                if host.absorb_max_pool(layer):
                    changed.append(tail)
                    absorbed.append(layer.name)
                    self._replace(reader, host.name)
                break
            affine = layer.as_channel_affine()
            if affine is not None:
                affine = self._channel_affine(affine, host, node)
                if affine is None or not host.fold_channel_affine(*affine):
                    break
            else:
                pointwise = self._pointwise(reader)
                if pointwise is None or not host.fuse_activation(pointwise):
                    break
            changed.append(tail)
            absorbed.append(layer.name)
            self._replace(reader, host.name)
            tail = reader.output_ref()
        if absorbed:
            self._record(host.name, absorbed, changed)
        return bool(absorbed)

    def _chain_op_node(self, node, op_node) -> None:
        """keras.ops binary op node -> pointwise activation: the node becomes its fused variant."""
        reader = self._sole_reader(node.output_ref())
        if reader is None or self.calls.get(reader.layer.name) != 1:
            return
        pointwise = self._pointwise(reader)
        if pointwise is None or pointwise.is_identity:
            return
        fused = op_node.fused_with_activation(pointwise)
        if fused is None:
            return
        node.layer = self.graph.layers[op_node.name] = fused
        self._replace(reader, op_node.name)
        self._record(op_node.name, [reader.layer.name], [node.output_ref()])

    # -- Add (+ activation) -> the convolution producing one of its two inputs ------------------------
    def _add_into_producer(self, node) -> None:
        """A residual connection: Add(a, conv(x)) (and its fused activation) computed in the
        epilogue of the convolution, which reads `a` as it writes: one pass fewer over the
        tensor, one dispatch fewer. Only where the convolution's output goes to this Add alone,
        `a` is computed before the convolution runs, and both have the shape of the sum."""
        if len(node.refs) != 2 or len(node.args) != 1 or self.refs_in(node.kwargs) \
                or node.refs[0] == node.refs[1]:
            return
        order = {n.output_ref(): i for i, n in enumerate(self.graph.nodes)}
        shapes = self._dry_shapes()
        for source, ref in enumerate(node.refs):
            other = node.refs[1 - source]
            host_node, passed = self._fused_producer(ref)
            if host_node is None or ref in self.outputs or self.consumers.get(ref) != [node] \
                    or self.calls.get(host_node.layer.name) != 1 or len(host_node.refs) != 1:
                continue
            # The tensor holding `other`'s value: a folded BatchNormalization's output is its
            # host's (the fused-away node making the view may come after the convolution).
            source_node, _ = self._fused_producer(other)
            if source_node is not None:
                other = source_node.output_ref()
            if order.get(other, -1) >= order[host_node.output_ref()]:
                continue                   # `other` is computed after the convolution
            out = shapes.get(node.output_ref())
            if out is None or None in out[1:] or shapes.get(host_node.output_ref()) != out \
                    or shapes.get(other) != out:
                continue
            if not host_node.layer.absorb_add(node.layer.epilogue):
                continue
            host_node.keras_refs = list(host_node.refs)
            host_node.args = [host_node.refs[0], other]
            host_node.refs = [host_node.refs[0], other]
            self.consumers.setdefault(other, []).append(host_node)
            add_name = node.layer.name
            node.layer = FusedAway(node.layer, host_node.layer.name, source)
            self._record(host_node.layer.name, [add_name], passed)
            self._move_fusion(add_name, host_node.layer.name)
            return

    def _fused_producer(self, ref):
        """(node, refs): the node whose dispatch computes `ref`, and the refs in between that only
        pass its value on: layers fused away into it (a folded BatchNormalization) and inference
        identities (Dropout) that alone read their input."""
        node, passed = self.producer.get(ref), [ref]
        while node is not None and len(node.refs) == 1:
            layer, source = node.layer, node.refs[0]
            if isinstance(layer, FusedAway) and layer.source is None:
                host = self.producer.get(source)
                if host is None or (not isinstance(host.layer, FusedAway)
                                    and host.layer.name != layer.host):
                    return None, []
            elif not (layer.returns_its_input and source not in self.outputs
                      and self.consumers.get(source) == [node]):
                break
            node, passed = self.producer.get(source), passed + [source]
        return node, passed

    def _move_fusion(self, old_host: str, new_host: str) -> None:
        """What was fused into `old_host` (an Add's activation) now belongs to `new_host`."""
        moved = next((f for f in self.graph.fusions if f.host == old_host), None)
        if moved is None:
            return
        self.graph.fusions.remove(moved)
        self._record(new_host, moved.absorbed, moved.changed)
        for reader in self.graph.nodes:
            if isinstance(reader.layer, FusedAway) and reader.layer.host == old_host:
                reader.layer.host = new_host

    # -- what a layer contributes ------------------------------------------------------------------
    @staticmethod
    def _pointwise(node):
        """The pointwise function a layer call computes, or None when it is not one (softmax,
        PReLU, anything with options kerasgl cannot fuse)."""
        return node.layer.as_pointwise(node.args, node.kwargs)

    def _channel_affine(self, affine, host, host_node):
        """(scale, shift) per channel of a per-channel affine layer (an inference
        BatchNormalization: as_channel_affine) whose axis is the last axis of the host's output
        (the channels of a channels-last convolution, a Dense's units); None otherwise."""
        axis, inv, shift = affine
        axes = axis if isinstance(axis, tuple) else (axis,)
        if len(axes) != 1:
            return None
        axis = axes[0]
        if axis >= 0:
            rank = self._output_rank(host, host_node)
            if rank is None or axis != rank - 1:
                return None
        elif axis != -1:
            return None
        return inv.reshape(-1), shift.reshape(-1)

    def _output_rank(self, host, host_node):
        if host.output_rank() is not None:
            return host.output_rank()
        if self._ranks is None:
            self._ranks = self._dry_shapes()
        shape = self._ranks.get(host_node.output_ref())
        return None if shape is None else len(shape)

    def _dry_shapes(self) -> dict:
        """Best-effort shapes without building anything (for the rank of a Dense's output):
        unknown past a nested model or any layer that cannot say its shape unbuilt."""
        graph, shapes = self.graph, {}
        if self.input_shapes is not None:
            shapes.update({ref: tuple(s) for ref, s in zip(graph.input_refs, self.input_shapes)})
        for node in graph.nodes:
            layer = node.layer
            if node.output_ref() in shapes and not node.refs:
                continue
            try:
                if isinstance(layer, InputLayer) and not node.refs:
                    outs = [tuple(layer.batch_shape)]
                elif layer.nested_graph is not None or any(r not in shapes for r in node.refs):
                    continue
                elif isinstance(layer, OpNode):
                    symbolic = lambda ref: Symbolic(shapes[ref])  # noqa: E731
                    outs = output_list(layer.node_output_shape(map_refs(node.args, symbolic),
                                                               map_refs(node.kwargs, symbolic)))
                else:
                    positional = [map_refs(a, shapes.__getitem__) for a in node.args if self.refs_in(a)]
                    options = {k: v for k, v in node.kwargs.items()
                               if k in getattr(layer, "shape_keywords", ())}
                    outs = output_list(layer.compute_output_shape(*positional, **options))
            except Exception:       # unknown here; the real inference reports real errors
                continue
            for i, shape in enumerate(outs):
                shapes[node.output_ref(i)] = shape
        return shapes
