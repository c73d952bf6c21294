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

What each layer does with a mask is the layer class's declaration (kerasgl/layers/base.py:
`mask_behaviour` and the facts next to it; e.g. an RNN "consumes" it and passes it on with its
sequence output, a merge "computes" its own from its inputs', a convolution "drops" it); this
module replays Keras's propagation over those declarations, and the layers compute the masks they
make or combine (`compute_mask`). A mask that reaches a layer whose class declares nothing about
masks, or whose result would depend on a mask kerasgl cannot reproduce, is refused at load
(UnsupportedLayerError): never a silent wrong answer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UnsupportedLayerError
from ..keras_ops.node import OpNode
from ..saving.spec import TensorRef
from ..tensors import ownership
from ..tensors.tensor import view
from .arguments import refs_in


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


def _all_inputs_state(states):
    """mask_from "all_inputs" (Keras's Merge.compute_mask): none if any input has none."""
    if not states or any(s is None for s in states):
        return None
    return next((s for s in states if isinstance(s, Unknown)), states[0])


def _any_input_state(states):
    """mask_from "any_input" (Concatenate.compute_mask): none only when no input has a mask."""
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


def _takes_mask(layer) -> bool:
    """Keras 3's call signature has `mask`, which step 6 fills in (see the module docstring)."""
    return layer.keras_call_takes_mask or _called_with_mask(layer)


def _called_with_mask(layer) -> bool:
    """kerasgl's call receives `mask=` (one tensor, or one per tensor of its list)."""
    return layer.mask_behaviour == "consumes" and layer.mask_argument in ("mask", "mask_list")


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
    rule: str = "first"                         # first | computed (the layer's compute_mask)
    outputs: list = field(default_factory=list)   # which outputs carry the mask


class MaskPlan:
    """Which calls of a graph receive a propagated mask, decided at load (after shape inference)."""

    def __init__(self, graph):
        self.graph = graph
        self.keras3 = graph.spec.keras_major == 3
        self.calls: dict[tuple, MaskCall] = {}
        self.state: dict = {}                  # TensorRef -> Masked | Unknown (absent: no mask)
        self._objects: dict = {}               # TensorRef -> TensorRef of the same Keras tensor
        self._erasers: dict = {}               # object -> [nodes whose call erases its mask]
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
        """The Keras tensors each erasing call (MultiHeadAttention) erases the mask of, seeing
        through layers that return their input object."""
        for node in graph.nodes:
            layer = node.layer
            first = refs_in(first_argument(node))
            if layer.returns_its_input and len(first) == 1:
                self._objects[node.output_ref()] = self._object(first[0])
            if layer.erases_input_masks:
                for ref in self._bound_arguments(node).values():
                    if ref is not None:
                        self._erasers.setdefault(self._object(ref), []).append(node)

    def _object(self, ref):
        return self._objects.get(ref, ref)

    @staticmethod
    def _bound_arguments(node) -> dict:
        """The TensorRef of each of the layer's tensor_arguments (query / value / key) in a call,
        by position or by keyword (None when not given)."""
        names = node.layer.tensor_arguments
        bound = dict(zip(names, node.args))
        for name in names:
            if name in node.kwargs:
                bound[name] = node.kwargs[name]
        return {name: bound.get(name) if isinstance(bound.get(name), TensorRef) else None
                for name in names}

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
        layer = node.layer
        call = MaskCall()
        first_refs = refs_in(first_argument(node))
        self._first_ref = first_refs[0] if first_refs else None
        recorded = node.kwargs.get("mask")
        if recorded is not None and refs_in(recorded):
            self._check_recorded(layer, recorded)
            call.explicit = True
            if not _called_with_mask(layer):
                call.drop = ("mask",)
        uses = []                               # (state, how the layer uses it) to check
        if layer.mask_behaviour == "consumes" and layer.mask_argument == "per_argument":
            out_state = self._plan_per_argument(node, call, uses)
        else:
            visible = [self._visible(node, ref) for ref in first_refs]
            call.previous = [ref if state is not None else None
                             for ref, state in zip(first_refs, visible)]
            tensor_args = [a for a in node.args if refs_in(a)] + \
                          [v for k, v in node.kwargs.items() if refs_in(v)]
            if not call.explicit and _takes_mask(layer) and len(tensor_args) == 1 \
                    and any(s is not None for s in visible):
                uses.extend(s for s in visible if s is not None)
                source = _any_state(visible).source
                if layer.refuses_mask(3) or layer.mask_behaviour is None:
                    raise _refuse(layer, source)
                if layer.mask_argument == "mask_list" and _called_with_mask(layer):
                    call.add["mask"] = list(call.previous)
                elif _called_with_mask(layer):
                    call.add["mask"] = next(r for r in call.previous if r is not None)
                # else: the call takes the mask and ignores it (BatchNormalization)
            out_state = self._output_state(layer, call, visible, recorded)
        for state in uses:
            if isinstance(state, Unknown):
                raise _refuse_unknown(layer, state)
        if layer.mask_argument == "mask" and (call.explicit or "mask" in call.add):
            mask_shape = self.graph.shapes.get(refs_in(recorded)[0]) if call.explicit \
                else self.state[call.add["mask"]].shape
            layer.check_mask_shape(mask_shape, self.graph.shapes.get(self._first_ref))
        self._set_outputs(node, call, out_state)
        return call

    def _plan_per_argument(self, node, call: MaskCall, uses: list):
        """Keras 3's `<argument>_mask` keywords (MultiHeadAttention's query_mask / value_mask /
        key_mask): each tensor argument's visible mask, unless the file records that keyword.
        The first argument's is the one the call reads itself (MultiHeadAttention.call takes the
        query's mask off the tensor): a recorded one is replaced by it. Returns the state of the
        output's mask: the first argument's."""
        arguments = self._bound_arguments(node)
        first, *others = node.layer.tensor_arguments
        first_state = self._visible(node, arguments[first])
        call.drop = (f"{first}_mask",) if f"{first}_mask" in node.kwargs else ()
        if first_state is not None:
            call.add[f"{first}_mask"] = arguments[first]
            uses.append(first_state)
        for part in others:
            ref = arguments[part]
            if f"{part}_mask" in node.kwargs or ref is None:
                continue
            state = self._visible(node, ref)
            if state is not None:
                call.add[f"{part}_mask"] = ref
                uses.append(state)
        call.previous = [arguments[first] if first_state is not None else None]
        return first_state

    def _check_recorded(self, layer, recorded) -> None:
        """A recorded mask= must be one kerasgl honours."""
        if layer.mask_behaviour == "consumes" and layer.mask_argument == "mask_list":
            if isinstance(recorded, (list, tuple)) and 2 <= len(recorded) <= 3:
                return
        elif layer.ignores_mask_argument or layer.mask_behaviour == "pass_through":
            return
        elif _called_with_mask(layer) and len(refs_in(recorded)) == 1:
            if layer.refuses_mask(3):
                raise _refuse(layer, refs_in(recorded)[0].layer)
            return
        raise UnsupportedLayerError(
            f"Layer '{layer.name}' ({layer.class_name}): is called with a mask (from "
            f"'{refs_in(recorded)[0].layer}') that would change its result; kerasgl does not "
            "support masks for this layer.")

    def _output_state(self, layer, call: MaskCall, visible: list, recorded=None):
        """Keras's compute_mask, on what is known at load; sets call.rule. Which of the outputs
        carry it is the layer's masked_outputs()."""
        if layer.makes_mask:
            call.rule = "computed"
            shape = self.graph.shapes.get(self._first_ref)
            if shape is not None:
                shape = tuple(layer.mask_shape(shape))
            return Masked(layer.name, shape)
        if call.explicit:
            # The recorded mask (for attention, its first entry: the query's) is the output's.
            first = recorded[0] if isinstance(recorded, (list, tuple)) else recorded
            refs = refs_in(first)
            previous = [Masked(layer.name, self.graph.shapes.get(refs[0])) if refs else None]
        else:
            previous = visible
        if not any(s is not None for s in previous):
            return None
        behaviour = layer.mask_behaviour
        if behaviour is None:
            raise _refuse(layer, _any_state(previous).source)
        if behaviour == "computes":
            call.rule = "computed"
            return _any_input_state(previous) if layer.mask_from == "any_input" \
                else _all_inputs_state(previous)
        if behaviour in ("pass_through", "consumes"):
            return previous[0]
        return None                              # the layer drops the mask

    def _set_outputs(self, node, call: MaskCall, out_state) -> None:
        layer = node.layer
        count = max(1, len(node.output_shapes))
        carried = layer.masked_outputs() if out_state is not None else ()
        call.outputs = [i in carried for i in range(count)]
        for i, flag in enumerate(call.outputs):
            if flag:
                self.state[node.output_ref(i)] = out_state
        inner = layer.nested_graph
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
        layer = node.layer
        first_refs = refs_in(first_argument(node))
        self._first_ref = first_refs[0] if first_refs else None
        incoming = [self.state.get(ref) for ref in first_refs]
        call = MaskCall(previous=[ref if s is not None else None
                                  for ref, s in zip(first_refs, incoming)])
        if any(s is not None for s in incoming):
            source = _any_state(incoming).source
            if layer.mask_behaviour == "consumes" and not layer.keras2_mask_refused:
                if layer.refuses_mask(2):
                    raise _refuse(layer, source)
                unknown = next((s for s in incoming if isinstance(s, Unknown)), None)
                if unknown is not None:
                    raise _refuse_unknown(layer, unknown)
                call.add["mask"] = next(r for r in call.previous if r is not None)
            elif layer.mask_behaviour in ("consumes", None):
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
        recorded = masks.pop(("recorded", node.key), None)
        previous = [masks.get(ref) if ref is not None else None for ref in call.previous]
        if call.rule == "computed":
            if recorded is not None:
                recorded.dispose()              # a layer making its own mask ignores it
            mask = node.layer.compute_mask(args[0], previous)
        elif recorded is not None:
            mask = recorded
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


def makes_masks(graph) -> bool:
    """Whether masks flow in `graph` itself: a layer makes one, or a call is given one."""
    return any(layer.makes_mask for layer in graph.layers.values()) or \
        any("mask" in node.kwargs for node in graph.nodes)


def first_argument(node):
    """What Keras calls the call's first argument: the first positional one, or, for a call made
    by keywords only (Keras 3 then saves every tensor as a keyword), the first keyword's."""
    if node.args:
        return node.args[0]
    return next((v for k, v in node.kwargs.items() if refs_in(v) and not k.endswith("mask")), None)


def _copy(mask):
    return view(mask, mask.shape)


def release(masks: dict) -> None:
    ownership.dispose(list(masks.values()))
    masks.clear()
