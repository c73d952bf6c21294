"""Keras masks: which layer calls receive one, what it is, and where it goes next.

Keras attaches a mask (a boolean per time step) to the output of `Embedding(mask_zero=True)` and
`Masking`, and carries it through the layers that support masking (keras/src/layers/layer.py:
`compute_mask` after each call; layers that do not support masking drop it). Layers whose call
takes a mask receive it. In kerasgl a mask is a float32 (batch, time) tensor of 0/1.

Keras 3 (layer.py `__call__`, step 6) passes a tensor's mask implicitly, at run time, to:
- a call with exactly one tensor argument whose signature has `mask` (RNNs, Bidirectional,
  TimeDistributed, GlobalAveragePooling1D, Softmax, BatchNormalization, Attention and
  AdditiveAttention, whose one argument is the list [query, value(, key)]: mask=[masks...]);
- a call with several tensor arguments, for each argument `x` whose signature has `x_mask`:
  MultiHeadAttention's query_mask / value_mask / key_mask (key only when a key is given). An
  LSTM called with initial_state has two tensor arguments and no `sequences_mask`: no mask.
A functional file records these masks (`mask=` computed by op nodes: NotEqual, Any, LogicalOr...)
only by accident of a fast path (one positional float tensor, no keyword): Softmax(x) is
recorded, MultiHeadAttention(q, v) and Attention()([q, v]) never are. Keras re-derives the
others when it rebuilds the model, so kerasgl does too: `MaskPlan` replays Keras's propagation
for every graph, and honours recorded masks where they exist (a recorded mask wins).

Keras 3's MultiHeadAttention.call also *erases* the masks of its query, value and key tensors
(set_keras_mask(x, None), in place): a layer that reads one of those masks after the attention
ran sees none. A transformer's residual Add([x, attention(x, x)]) therefore carries no mask in
Keras, and neither does what follows it (unless a mask was recorded in the file). Keras runs
calls in its own order (ops/function.py map_graph: by depth); when a call that reads the mask is
neither before nor after the attention by the graph's dependencies, the mask it sees depends on
that order, and a load that would need it is refused.

Keras 2 files (tf.keras) pass the mask of a call's first argument to layers that take one;
tf.keras's attention layers and Softmax treat masks differently from Keras 3 and are refused
when a mask reaches them.

A mask that reaches a layer whose result would depend on it, and that kerasgl does not implement
with masks, is refused at load (UnsupportedLayerError): never a silent wrong answer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..tensors import ownership
from ..errors import UnsupportedLayerError

RECURRENT = {"SimpleRNN", "LSTM", "GRU", "RNN", "Bidirectional"}
GLOBAL_AVERAGE_1D = {"GlobalAveragePooling1D", "GlobalAvgPool1D"}
# Layers whose call takes `mask` and whose result uses it, implemented by kerasgl.
USES_MASK = RECURRENT | GLOBAL_AVERAGE_1D | {"TimeDistributed"}
# Layers called with mask=[query_mask, value_mask(, key_mask)] (Keras 3).
LIST_MASK_ATTENTION = {"Attention", "AdditiveAttention"}
MHA = "MultiHeadAttention"
# supports_masking with the default compute_mask: values do not depend on the mask, which passes on.
PASS_THROUGH = {
    "InputLayer", "Dense", "Activation", "Dropout", "SpatialDropout1D",
    "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise", "GaussianDropout", "AlphaDropout",
    "ActivityRegularization", "ReLU", "LeakyReLU", "PReLU", "ELU", "ThresholdedReLU",
    "BatchNormalization", "LayerNormalization", "GroupNormalization", "UnitNormalization",
    "Rescaling", "Normalization", "Identity", "TimeDistributed",
}
# Merges: the output mask is the OR of the input masks (None if any input has none).
MERGES = {"Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"}
# Layers that take a mask argument but ignore it at inference: a mask is not passed on to them.
IGNORES_MASK_ARGUMENT = {"BatchNormalization", "Dropout", "Masking", "Embedding"}
# Keras 3 layers whose call signature has `mask` (step 6 fills it in when it is not given).
TAKES_MASK = USES_MASK | LIST_MASK_ATTENTION | {"Softmax", "BatchNormalization", "Lambda",
                                                "Sequential", "Functional", "Model"}
# Keras 3 layers whose inference call returns its input object itself: the output *is* the input
# tensor, so it shares that tensor's mask (and MultiHeadAttention's erasing of it).
RETURNS_ITS_INPUT = {"Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D",
                     "GaussianNoise", "GaussianDropout", "AlphaDropout", "ActivityRegularization",
                     "Identity"}


def makes_mask(layer) -> bool:
    if layer.class_name == "Masking":
        return True
    return layer.class_name == "Embedding" and bool(layer.config.get("mask_zero"))


# -------------------------------------------------------------------------------------------------
# What is known at load about a tensor's mask
# -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Masked:
    """The tensor carries a mask, first made by layer `source`; its shape when known."""
    source: str
    shape: tuple | None = None


@dataclass(frozen=True)
class Unknown:
    """A mask kerasgl cannot reproduce: a layer that would use it is refused, saying `why`."""
    source: str
    why: str


def _erased_unknown(source: str, attention: str) -> Unknown:
    return Unknown(source, (
        f"the mask made by layer '{source}' is on a tensor that MultiHeadAttention "
        f"'{attention}' also reads; Keras 3 erases that mask when the attention runs, and the "
        "graph does not fix whether Keras runs the attention first, so kerasgl cannot tell "
        "which answer Keras gives. Rewire the model so that one call depends on the other, or "
        "pass the mask explicitly"))


def _nested_unknown(model: str) -> Unknown:
    return Unknown(model, (
        f"the output of nested model '{model}' carries a mask (Embedding(mask_zero=True) or "
        "Masking inside it), which Keras passes on; kerasgl does not carry masks out of nested "
        "models"))


def _any_state(states):
    return next((s for s in states if s is not None), None)


def _merge_state(states):
    """Keras's Merge.compute_mask: None if any input has none, else the OR."""
    if not states or any(s is None for s in states):
        return None
    return next((s for s in states if isinstance(s, Unknown)), states[0])


def _concatenate_state(states):
    """Concatenate.compute_mask: None only when no input has a mask (missing ones count as ones)."""
    if all(s is None for s in states):
        return None
    unknown = next((s for s in states if isinstance(s, Unknown)), None)
    return unknown or Masked(_any_state(states).source)


def _refuse(layer, source: str) -> UnsupportedLayerError:
    return UnsupportedLayerError(
        f"Layer '{layer.name}' ({layer.class_name}) receives the mask made by layer '{source}' "
        "(mask_zero=True or Masking); Keras would use the mask there, and kerasgl does not "
        "support masks for this layer.")


def _refuse_unknown(layer, state: Unknown) -> UnsupportedLayerError:
    return UnsupportedLayerError(
        f"Layer '{layer.name}' ({layer.class_name}) would use a mask: {state.why}.")


# -------------------------------------------------------------------------------------------------
# The plan: per call, which masks go in and which come out
# -------------------------------------------------------------------------------------------------
@dataclass
class MaskCall:
    """How one call handles masks at run time."""
    add: dict = field(default_factory=dict)     # kwarg -> TensorRef or list of TensorRef|None
    drop: tuple = ()                            # recorded kwargs the call does not get
    explicit: bool = False                      # the output mask comes from the recorded mask=
    previous: list = field(default_factory=list)  # TensorRef|None per tensor of the first argument
    rule: str = "first"                         # made | first | merge | concatenate
    outputs: list = field(default_factory=list)   # which outputs carry the mask


class MaskPlan:
    """Which calls of a graph receive a propagated mask, decided at load (after shape inference)."""

    def __init__(self, graph):
        from ..layers.op_nodes import OpNode
        self.graph = graph
        self.keras3 = graph.spec.keras_major == 3
        self.calls: dict[tuple, MaskCall] = {}
        self.state: dict = {}                  # TensorRef -> Masked | Unknown (absent: no mask)
        self._objects: dict = {}               # TensorRef -> TensorRef of the same Keras tensor
        self._erasers: dict = {}               # object -> [MultiHeadAttention nodes]
        self._ancestors = None
        if self.keras3:
            self._find_erasers(graph)
        for node in graph.nodes:
            layer = node.layer
            if isinstance(layer, OpNode) or not node.refs and not node.args:
                continue                        # operations drop masks (keras.ops has none)
            call = self._plan_keras3(node) if self.keras3 else self._plan_keras2(node)
            if call is not None and (call.add or call.drop or any(call.outputs)):
                self.calls[node.key] = call

    def __bool__(self) -> bool:
        return bool(self.calls)

    # -- Keras 3 ----------------------------------------------------------------------------------
    def _find_erasers(self, graph):
        """The Keras tensors each MultiHeadAttention call erases the mask of (query, value and
        key), seeing through layers that return their input object."""
        from .graph import refs_in
        for node in graph.nodes:
            name = node.layer.class_name
            first = refs_in(_first_argument(node))
            if name in RETURNS_ITS_INPUT or (name == "Activation" and
                                             node.layer.config.get("activation") == "linear"):
                if len(first) == 1:
                    self._objects[node.output_ref()] = self._object(first[0])
            if name == MHA:
                for ref in self._mha_arguments(node).values():
                    if ref is not None:
                        self._erasers.setdefault(self._object(ref), []).append(node)

    def _object(self, ref):
        return self._objects.get(ref, ref)

    @staticmethod
    def _mha_arguments(node) -> dict:
        """query / value / key TensorRefs of a MultiHeadAttention call (key None when not given)."""
        from ..saving.spec import TensorRef
        bound = dict(zip(("query", "value", "key"), node.args))
        for name in ("query", "value", "key"):
            if name in node.kwargs:
                bound[name] = node.kwargs[name]
        return {name: bound.get(name) if isinstance(bound.get(name), TensorRef) else None
                for name in ("query", "value", "key")}

    def _is_ancestor(self, a_key, b_key) -> bool:
        if self._ancestors is None:
            self._ancestors = {}
            for node in self.graph.nodes:
                found = set()
                for ref in node.refs:
                    parent = (ref.layer, ref.node_index)
                    found.add(parent)
                    found |= self._ancestors.get(parent, set())
                self._ancestors[node.key] = found
        return a_key in self._ancestors.get(b_key, set())

    def _visible(self, node, ref):
        """The mask state of `ref` as `node` reads it in Keras 3 (after attentions erased it)."""
        if ref is None:
            return None
        state = self.state.get(ref)
        if state is None:
            return None
        unknown = None
        for attention in self._erasers.get(self._object(ref), ()):
            if attention.key == node.key or self._is_ancestor(node.key, attention.key):
                continue                        # reads before the attention runs
            if self._is_ancestor(attention.key, node.key):
                return None                     # the attention ran first: erased
            unknown = _erased_unknown(state.source, attention.layer.name)
        return unknown or state

    def _plan_keras3(self, node) -> MaskCall | None:
        from .graph import refs_in
        layer, name = node.layer, node.layer.class_name
        call = MaskCall()
        first_refs = refs_in(_first_argument(node))
        self._first_ref = first_refs[0] if first_refs else None
        recorded = node.kwargs.get("mask")
        if recorded is not None and refs_in(recorded):
            self._check_recorded(layer, recorded)
            call.explicit = True
            if name not in USES_MASK | LIST_MASK_ATTENTION | {"Softmax"}:
                call.drop = ("mask",)
        uses = []                               # (state, how the layer uses it) to check
        if name == MHA:
            arguments = self._mha_arguments(node)
            query_state = self._visible(node, arguments["query"])
            # MultiHeadAttention.call reads the query's mask itself: a recorded query_mask is
            # replaced by it.
            call.drop = ("query_mask",) if "query_mask" in node.kwargs else ()
            if query_state is not None:
                call.add["query_mask"] = arguments["query"]
                uses.append(query_state)
            for part in ("value", "key"):
                ref = arguments[part]
                if f"{part}_mask" in node.kwargs or ref is None:
                    continue
                state = self._visible(node, ref)
                if state is not None:
                    call.add[f"{part}_mask"] = ref
                    uses.append(state)
            call.previous = [arguments["query"] if query_state is not None else None]
            out_state = query_state
        else:
            visible = [self._visible(node, ref) for ref in first_refs]
            call.previous = [ref if state is not None else None
                             for ref, state in zip(first_refs, visible)]
            tensor_args = [a for a in node.args if refs_in(a)] + \
                          [v for k, v in node.kwargs.items() if refs_in(v)]
            if not call.explicit and name in TAKES_MASK and len(tensor_args) == 1 \
                    and any(s is not None for s in visible):
                uses.extend(s for s in visible if s is not None)
                _check_time_distributed(layer, _any_state(visible).source, TAKES_MASK)
                if name in LIST_MASK_ATTENTION:
                    call.add["mask"] = list(call.previous)
                elif name in USES_MASK | {"Softmax"}:
                    call.add["mask"] = next(r for r in call.previous if r is not None)
                elif name not in IGNORES_MASK_ARGUMENT:
                    raise _refuse(layer, _any_state(visible).source)
            out_state = self._output_state(layer, call, visible, recorded)
        for state in uses:
            if isinstance(state, Unknown):
                raise _refuse_unknown(layer, state)
        if name == "Softmax" and (call.explicit or "mask" in call.add):
            mask_shape = self.graph.shapes.get(refs_in(recorded)[0]) if call.explicit \
                else self.state[call.add["mask"]].shape
            _check_softmax_mask(layer, mask_shape, self.graph.shapes.get(self._first_ref))
        self._set_outputs(node, call, out_state)
        return call

    def _check_recorded(self, layer, recorded) -> None:
        """A recorded mask= must be one kerasgl honours."""
        from .graph import refs_in
        name = layer.class_name
        if name in LIST_MASK_ATTENTION:
            if isinstance(recorded, (list, tuple)) and 2 <= len(recorded) <= 3:
                return
        elif name in IGNORES_MASK_ARGUMENT or name in PASS_THROUGH - USES_MASK:
            return
        elif name in USES_MASK | {"Softmax"} and len(refs_in(recorded)) == 1:
            _check_time_distributed(layer, refs_in(recorded)[0].layer, TAKES_MASK)
            return
        raise UnsupportedLayerError(
            f"Layer '{layer.name}' ({name}): is called with a mask (from "
            f"'{refs_in(recorded)[0].layer}') that would change its result; kerasgl does not "
            "support masks for this layer.")

    def _output_state(self, layer, call: MaskCall, visible: list, recorded=None):
        """Keras's compute_mask, on what is known at load; sets call.rule."""
        name = layer.class_name
        if makes_mask(layer):
            call.rule = "made"
            shape = self.graph.shapes.get(self._first_ref)
            if shape is not None and layer.class_name == "Masking":
                shape = shape[:-1]
            return Masked(layer.name, tuple(shape) if shape is not None else None)
        if call.explicit:
            # The recorded mask (for attention, its first entry: the query's) is the output's.
            from .graph import refs_in
            first = recorded[0] if isinstance(recorded, (list, tuple)) else recorded
            refs = refs_in(first)
            previous = [Masked(layer.name, self.graph.shapes.get(refs[0])) if refs else None]
        else:
            previous = visible
        if not any(s is not None for s in previous):
            return None
        if name in MERGES:
            call.rule = "merge"
            return _merge_state(previous)
        if name == "Concatenate":
            call.rule = "concatenate"
            return _concatenate_state(previous)
        if name in LIST_MASK_ATTENTION or name in PASS_THROUGH or name == "Softmax":
            return previous[0]
        if name in RECURRENT:
            inner = (layer.config.get("layer") or {}).get("config", {})
            sequences = bool(layer.config.get("return_sequences", inner.get("return_sequences")))
            return previous[0] if sequences else None
        if not call.explicit and _reads_mask(layer) and name not in USES_MASK:
            raise _refuse(layer, _any_state(previous).source)
        return None                              # the layer drops the mask

    def _set_outputs(self, node, call: MaskCall, out_state) -> None:
        layer = node.layer
        count = max(1, len(node.output_shapes))
        call.outputs = [out_state is not None] + [False] * (count - 1)
        if layer.class_name == "Bidirectional" and out_state is not None and \
                layer.config.get("merge_mode", "concat") is None:
            call.outputs[1] = True
        for i, flag in enumerate(call.outputs):
            if flag:
                self.state[node.output_ref(i)] = out_state
        inner = getattr(layer, "graph", None)
        if inner is not None:
            # A nested model's outputs keep the masks its layers set on them (Keras passes them
            # on, at run time); kerasgl does not carry them out: a layer that would use one is
            # refused.
            inner_plan = MaskPlan(inner)
            for i, ref in enumerate(inner.output_refs):
                if inner_plan.state.get(ref) is not None:
                    self.state[node.output_ref(i)] = _nested_unknown(layer.name)

    # -- Keras 2 (tf.keras): the mask of the first argument -----------------------------------
    def _plan_keras2(self, node) -> MaskCall | None:
        from .graph import refs_in
        layer, name = node.layer, node.layer.class_name
        first_refs = refs_in(_first_argument(node))
        self._first_ref = first_refs[0] if first_refs else None
        incoming = [self.state.get(ref) for ref in first_refs]
        call = MaskCall(previous=[ref if s is not None else None
                                  for ref, s in zip(first_refs, incoming)])
        if any(s is not None for s in incoming):
            source = _any_state(incoming).source
            if name in USES_MASK:
                _check_time_distributed(layer, source, USES_MASK)
                unknown = next((s for s in incoming if isinstance(s, Unknown)), None)
                if unknown is not None:
                    raise _refuse_unknown(layer, unknown)
                call.add["mask"] = next(r for r in call.previous if r is not None)
            elif name not in PASS_THROUGH | MERGES | {"Concatenate"} and _reads_mask(layer):
                raise _refuse(layer, source)
        out_state = self._output_state(layer, call, incoming)
        self._set_outputs(node, call, out_state)
        return call

    # -- run time -----------------------------------------------------------------------------
    def prepare(self, node, kwargs: dict, masks: dict) -> dict:
        """The call's kwargs with its masks added (and recorded ones it does not take removed)."""
        call = self.calls.get(node.key)
        if call is None:
            return kwargs
        kwargs = dict(kwargs)
        if call.explicit and any(call.outputs):
            # The output mask is the recorded one: kept (a view) until record() reads it.
            recorded = kwargs["mask"]
            masks[("recorded", node.key)] = _copy(
                recorded[0] if isinstance(recorded, (list, tuple)) else recorded)
        for name in call.drop:
            kwargs.pop(name, None)
        for name, source in call.add.items():
            if isinstance(source, list):
                value = [masks.get(ref) if ref is not None else None for ref in source]
                if any(v is not None for v in value):
                    kwargs[name] = value
            elif masks.get(source) is not None:
                kwargs[name] = masks[source]
        return kwargs

    def record(self, node, args, outputs, masks: dict) -> None:
        """After a call: the masks of its outputs, as Keras's compute_mask, into `masks`."""
        call = self.calls.get(node.key)
        if call is None or not any(call.outputs):
            return
        layer = node.layer
        recorded = masks.pop(("recorded", node.key), None)
        if call.rule == "made":
            if layer.class_name == "Masking":
                mask = layer.compute_mask(args[0])
            else:
                from ..ops.masking import not_equal
                mask = not_equal(args[0], 0)
        elif recorded is not None:
            mask = recorded
        else:
            previous = [masks.get(ref) if ref is not None else None for ref in call.previous]
            if call.rule == "merge":
                mask = _combine("maximum", previous)
            elif call.rule == "concatenate":
                mask = _concatenate_masks(layer, args[0], previous)
            else:
                first = next((m for m in previous if m is not None), None)
                mask = _copy(first) if first is not None else None
        if mask is None:
            return
        wanted = [node.output_ref(i) for i, flag in enumerate(call.outputs[:len(outputs)]) if flag]
        for i, ref in enumerate(wanted):
            masks[ref] = mask if i == 0 else _copy(mask)
        if not wanted:
            mask.dispose()


def prepare_graph(graph) -> None:
    """Decide at load how masks reach the calls of `graph` (see the module docstring); sets
    graph.mask_plan (None when no call needs anything done about masks)."""
    plan = MaskPlan(graph)
    graph.mask_plan = plan if plan else None


def _check_time_distributed(layer, source: str, mask_takers: set) -> None:
    """TimeDistributed hands its inner layer the mask of each step when that layer takes one;
    kerasgl's TimeDistributed does not."""
    inner = (layer.config.get("layer") or {}).get("class_name")
    if layer.class_name == "TimeDistributed" and inner in mask_takers - IGNORES_MASK_ARGUMENT:
        raise _refuse(layer, source)


def _check_softmax_mask(layer, mask_shape, input_shape) -> None:
    """Keras's Softmax.call check, at load: the mask must broadcast to the inputs (dims that are
    None are not compared). Keras raises too, when the model runs."""
    if mask_shape is None or input_shape is None:
        return
    fits = len(mask_shape) <= len(input_shape) and all(
        m is None or i is None or m in (1, i)
        for m, i in zip(reversed(mask_shape), reversed(input_shape)))
    if not fits:
        raise UnsupportedLayerError(
            f"Layer '{layer.name}' (Softmax): is called with a mask of shape "
            f"{_format(mask_shape)} that does not broadcast to its input shape "
            f"{_format(input_shape)}; Keras 3 raises when it runs this model too.")


def _format(shape) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"


def _first_argument(node):
    """What Keras calls the call's first argument: the first positional one, or, for a call made
    by keywords only (Keras 3 then saves every tensor as a keyword), the first keyword's."""
    from .graph import refs_in
    if node.args:
        return node.args[0]
    return next((v for k, v in node.kwargs.items() if refs_in(v) and not k.endswith("mask")), None)


def _reads_mask(layer) -> bool:
    """Layers whose result would depend on a mask they receive (kerasgl does not implement them
    with masks unless listed above); the others drop it (Keras: supports_masking False)."""
    name = layer.class_name
    return name in USES_MASK or name in {
        "Softmax", "MultiHeadAttention", "Attention", "AdditiveAttention",
        "GroupedQueryAttention", "Lambda", "Sequential", "Functional", "Model"} or \
        name.endswith("Attention")


def _copy(mask):
    from ..tensors.tensor import view
    return view(mask, mask.shape)


def _combine(op: str, masks):
    from ..ops import elementwise
    if any(m is None for m in masks):
        return None
    out = _copy(masks[0])
    for m in masks[1:]:
        combined = elementwise.binary(op, out, m)
        out.dispose()
        out = combined
    return out


def _concatenate_masks(layer, inputs, masks):
    """Keras's Concatenate.compute_mask for (batch, time) masks of rank-3 inputs: along the last
    axis, the OR of the masks (an unmasked input counts as all ones); along time, the masks
    joined."""
    from ..ops import creation, merge
    inputs = list(inputs)
    rank = inputs[0].ndim
    axis = layer.config.get("axis", -1)
    axis = axis + rank if axis < 0 else axis
    filled = [m if m is not None else creation.fill(t.shape[:2], 1.0) for t, m in zip(inputs, masks)]
    try:
        if axis == rank - 1 and rank > 2:
            if any(m is None for m in masks):
                return creation.fill(inputs[0].shape[:2], 1.0)
            return _combine("maximum", filled)
        if axis == 1:
            return merge.concatenate(filled, axis=1)
        raise UnsupportedLayerError(f"Layer '{layer.name}' (Concatenate): masks of inputs joined "
                                    f"along axis {layer.config.get('axis')} are not supported.")
    finally:
        for m, original in zip(filled, masks):
            if original is None:
                m.dispose()


def release(masks: dict) -> None:
    ownership.dispose(list(masks.values()))
    masks.clear()

