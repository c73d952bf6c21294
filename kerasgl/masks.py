"""Keras masks: which layer calls receive one, what it is, and where it goes next.

Keras attaches a mask (a boolean per time step) to the output of `Embedding(mask_zero=True)` and
`Masking`, and carries it through the layers that support masking (keras/src/layers/layer.py:
`compute_mask` after each call; layers that do not support masking drop it). Layers whose call
takes a `mask` receive it. In kerasgl a mask is a float32 (batch, time) tensor of 0/1.

Two ways a model says which calls get a mask:
- Keras 3 functional configs record it: the call has a `mask=` argument, a tensor computed by op
  nodes (NotEqual, Any, LogicalOr...; see layers/masking.py). The graph runs those nodes like any
  other; here we only check that the receiving layer can honour a mask (`check_explicit`).
- Sequential models (and Keras 2 functional configs) record nothing: Keras propagates masks at
  run time. `MaskPlan` reproduces that propagation (`prepare` before a call adds the mask
  argument, `record` after it computes the output masks).

A mask that reaches a layer whose result would depend on it, and that kerasgl does not implement
with masks, is refused at load (UnsupportedLayerError): never a silent wrong answer.
"""
from __future__ import annotations

from . import ownership
from .errors import UnsupportedLayerError

RECURRENT = {"SimpleRNN", "LSTM", "GRU", "RNN", "Bidirectional"}
# Layers whose call uses the mask, implemented by kerasgl (GlobalAveragePooling1D here).
USES_MASK = RECURRENT | {"TimeDistributed", "GlobalAveragePooling1D", "GlobalAvgPool1D"}
# supports_masking with the default compute_mask: values do not depend on the mask, which passes on.
PASS_THROUGH = {
    "InputLayer", "Dense", "EinsumDense", "Activation", "Dropout", "SpatialDropout1D",
    "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise", "GaussianDropout", "AlphaDropout",
    "ActivityRegularization", "ReLU", "LeakyReLU", "PReLU", "ELU", "BatchNormalization",
    "LayerNormalization", "GroupNormalization", "UnitNormalization", "Rescaling",
    "Normalization", "Identity", "TimeDistributed",
}
# Merges: the output mask is the OR of the input masks (None if any input has none).
MERGES = {"Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"}
# Layers that take a mask argument but ignore it at inference: an explicit mask is dropped.
IGNORES_MASK_ARGUMENT = {"BatchNormalization", "Dropout", "Masking", "Embedding"}


def makes_mask(layer) -> bool:
    if layer.class_name == "Masking":
        return True
    return layer.class_name == "Embedding" and bool(layer.config.get("mask_zero"))


def _refuse(layer, source: str) -> UnsupportedLayerError:
    return UnsupportedLayerError(
        f"Layer '{layer.name}' ({layer.class_name}) receives the mask made by layer '{source}' "
        "(mask_zero=True or Masking); Keras would use the mask there, and kerasgl does not "
        "support masks for this layer.")


def _masked_outputs(layer, incoming: list, count: int) -> list[bool]:
    """Which of the call's outputs carry a mask (Keras's compute_mask), given which of the inputs
    in its first argument do."""
    name = layer.class_name
    if makes_mask(layer):
        return [True] * count
    masked = False
    if any(incoming):
        if name in PASS_THROUGH:
            masked = incoming[0]
        elif name in MERGES:
            masked = all(incoming)
        elif name == "Concatenate":
            masked = True
        elif name in RECURRENT:
            inner = (layer.config.get("layer") or {}).get("config", {})
            masked = bool(layer.config.get("return_sequences", inner.get("return_sequences")))
            if masked and name == "Bidirectional" and layer.config.get("merge_mode", "concat") is None:
                return [True, True] + [False] * (count - 2)
    return [masked] + [False] * (count - 1)


# -------------------------------------------------------------------------------------------------
# Explicit masks (Keras 3 functional)
# -------------------------------------------------------------------------------------------------
def check_explicit(graph) -> None:
    """Every call with a recorded `mask=` must be one kerasgl honours; layers that ignore their
    mask argument lose it here."""
    from .graph import refs_in
    for node in graph.nodes:
        if "mask" not in node.kwargs:
            continue
        refs = refs_in(node.kwargs["mask"])
        layer = node.layer
        if not refs:
            node.kwargs.pop("mask")
        elif layer.class_name in IGNORES_MASK_ARGUMENT or layer.class_name in PASS_THROUGH - USES_MASK:
            node.kwargs.pop("mask")
            node.refs = refs_in(node.args) + refs_in(node.kwargs)
        elif layer.class_name not in USES_MASK or len(refs) != 1:
            raise UnsupportedLayerError(
                f"Layer '{layer.name}' ({layer.class_name}): is called with a mask (from "
                f"'{refs[0].layer}') that would change its result; kerasgl does not support "
                "masks for this layer.")


# -------------------------------------------------------------------------------------------------
# Implicit masks (Sequential, Keras 2 functional)
# -------------------------------------------------------------------------------------------------
class MaskPlan:
    """Which calls of a graph receive a propagated mask, decided at load (after shape inference)."""

    def __init__(self, graph):
        from .graph import refs_in
        from .layers.op_nodes import OpNode
        self.receives: dict[tuple, object] = {}   # node key -> the TensorRef whose mask it gets
        self.masked: dict = {}                    # TensorRef -> name of the layer that made the mask
        for node in graph.nodes:
            layer = node.layer
            first_arg = refs_in(node.args[:1])
            incoming = [ref in self.masked for ref in first_arg]
            count = max(1, len(node.output_shapes))
            if isinstance(layer, OpNode):
                continue                          # operations drop masks (keras.ops has none)
            source = layer.name
            if any(incoming):
                first = next(ref for ref, m in zip(first_arg, incoming) if m)
                source = self.masked[first]
                if layer.class_name in USES_MASK:
                    inner = (layer.config.get("layer") or {}).get("class_name")
                    if layer.class_name == "TimeDistributed" and inner in USES_MASK:
                        raise _refuse(layer, source)
                    self.receives[node.key] = first
                elif layer.class_name not in PASS_THROUGH | MERGES | {"Concatenate"} \
                        and not _drops(layer):
                    raise _refuse(layer, source)
            for i, masked in enumerate(_masked_outputs(layer, incoming, count)):
                if masked:
                    self.masked[node.output_ref(i)] = source

    def __bool__(self) -> bool:
        return bool(self.masked)

    def prepare(self, node, kwargs: dict, masks: dict) -> dict:
        """The call's kwargs with its mask added (the propagated mask of its first masked input)."""
        ref = self.receives.get(node.key)
        mask = masks.get(ref) if ref is not None else None
        return {**kwargs, "mask": mask} if mask is not None else kwargs

    def record(self, node, args, outputs, masks: dict) -> None:
        """After a call: the masks of its outputs, as Keras's compute_mask, into `masks`."""
        from .graph import refs_in
        wanted = [node.output_ref(i) for i in range(len(outputs)) if node.output_ref(i) in self.masked]
        if not wanted:
            return
        layer = node.layer
        incoming = [masks.get(ref) for ref in refs_in(node.args[:1])]
        if layer.class_name == "Masking":
            mask = layer.compute_mask(args[0])
        elif layer.class_name == "Embedding":
            from .ops.masking import not_equal
            mask = not_equal(args[0], 0)
        elif layer.class_name in MERGES:
            mask = _combine("maximum", incoming)
        elif layer.class_name == "Concatenate":
            mask = _concatenate_masks(layer, args[0], incoming)
        else:
            first = next((m for m in incoming if m is not None), None)
            mask = _copy(first) if first is not None else None
        if mask is None:
            return
        for i, ref in enumerate(wanted):
            masks[ref] = mask if i == 0 else _copy(mask)


def prepare_graph(graph) -> None:
    """Decide at load how masks reach the calls of `graph` (see the module docstring); sets
    graph.mask_plan (None when no mask is propagated at run time)."""
    if graph.spec.keras_major == 3 and graph.kind == "Functional":
        check_explicit(graph)
        graph.mask_plan = None
    else:
        plan = MaskPlan(graph)
        graph.mask_plan = plan if plan else None


def _drops(layer) -> bool:
    """Layers that do not support masking: Keras drops the mask there (values unchanged)."""
    name = layer.class_name
    return name not in USES_MASK and name not in {
        "Softmax", "MultiHeadAttention", "Attention", "AdditiveAttention",
        "GroupedQueryAttention", "Lambda", "Sequential", "Functional", "Model"} and \
        not name.endswith("Attention")


def _copy(mask):
    from .tensor import view
    return view(mask, mask.shape)


def _combine(op: str, masks):
    from .ops import elementwise
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
    from .ops import creation, merge
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


# -------------------------------------------------------------------------------------------------
# Layers kerasgl runs with a mask outside their own module
# -------------------------------------------------------------------------------------------------
def call_with_mask(layer, args, kwargs):
    """layer.call, except for the layers whose masked call lives here (GlobalAveragePooling1D)."""
    mask = kwargs.get("mask")
    if mask is not None and layer.class_name in ("GlobalAveragePooling1D", "GlobalAvgPool1D"):
        from .ops.masking import masked_mean_over_time
        if layer.config.get("data_format", "channels_last") == "channels_first":
            raise UnsupportedLayerError(f"Layer '{layer.name}' (GlobalAveragePooling1D): a mask "
                                        "with channels_first is not supported.")
        return masked_mean_over_time(args[0], mask, bool(layer.config.get("keepdims", False)))
    return layer.call(*args, **kwargs)
