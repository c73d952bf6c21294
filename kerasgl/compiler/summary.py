"""model.summary(): Keras's table (layer, output shape, parameters) plus the shaders each layer runs."""
from __future__ import annotations

from .arguments import format_shape
from . import text_table
from .fusion import FusedAway, fusions_of
from .graph import Graph, NestedModel

COLUMNS = ("Layer (type)", "Output Shape", "Param #", "Connected to", "Shaders")


def _keras_shape(graph: Graph, ref):
    """The shape Keras gives a tensor: what flows, except out of a layer that took over the next
    one's work (a convolution with a pooling fused in reports its own, unpooled output)."""
    for node in graph.nodes:
        if node.output_ref() == ref and node.refs and node.refs[0] in graph.shapes:
            shape = node.layer.unfused_output_shape(graph.shapes[node.refs[0]])
            if shape is not None:
                return tuple(shape)
    return graph.shapes[ref]


def _shapes_text(graph: Graph, layer) -> str:
    nodes = graph.nodes_of(layer.name)
    if not nodes:
        return "(not called)"
    texts = []
    for node in nodes:
        shapes = node.output_shapes
        if node.refs and node.refs[0] in graph.shapes:
            try:    # the shape Keras reports (what flows is the producer's business)
                if isinstance(node.layer, FusedAway):
                    shapes = [tuple(node.layer.original.compute_output_shape(
                        _keras_shape(graph, node.refs[0])))]
                elif len(shapes) == 1:
                    shapes = [_keras_shape(graph, node.output_ref())]
            except Exception:
                pass
        text = format_shape(shapes[0]) if len(shapes) == 1 else "[" + ", ".join(
            format_shape(s) for s in shapes) + "]"
        if text not in texts:
            texts.append(text)
    return texts[0] if len(texts) == 1 else "multiple"


def _connected_text(graph: Graph, layer) -> str:
    sources = []
    for node in graph.nodes_of(layer.name):
        for ref in node.keras_refs if node.keras_refs is not None else node.refs:
            text = ref.layer if (ref.node_index, ref.tensor_index) == (0, 0) else \
                f"{ref.layer}[{ref.node_index}][{ref.tensor_index}]"
            if text not in sources:
                sources.append(text)
    return ", ".join(sources) or "-"


def _summary_layers(graph: Graph) -> list:
    # Like Keras 3's summary: a functional model lists its operations (op nodes) too.
    return list(graph.layers.values()) if graph.kind != "Sequential" else graph.listed_layers


def _rows(graph: Graph, layers, expand_nested: bool, functional: bool, depth: int = 0):
    indent = "  " * depth + ("└ " if depth else "")
    # Load-time fusions (fusion.py): the host's row gets a note under it ("+ fused in: bn1,
    # relu1"); the layers fused away run no shader of their own. Each row is its five cells and
    # its note (or "").
    absorbed = {f.host: f.absorbed for f in fusions_of(graph)}
    host_of = {name: f.host for f in fusions_of(graph) for name in f.absorbed}
    for layer in layers:
        note = f"+ fused in: {', '.join(absorbed[layer.name])}" if layer.name in absorbed else ""
        shaders = (f"fused into {host_of[layer.name]}" if layer.name in host_of else
                   ", ".join(s.removesuffix(".comp") for s in layer.shaders) or "-")
        yield (f"{indent}{layer.name} ({layer.class_name})", _shapes_text(graph, layer),
               f"{layer.param_count:,}", _connected_text(graph, layer) if functional else "",
               shaders, note)
        if expand_nested and isinstance(layer, NestedModel):
            inner = layer.graph
            yield from _rows(inner, _summary_layers(inner), True, inner.kind != "Sequential", depth + 1)


def _human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.2f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return f"{n} B"


def weight_bytes_on_gpu(graph: Graph) -> int:
    total = 0
    for layer in graph.layers.values():
        if isinstance(layer, NestedModel):
            total += weight_bytes_on_gpu(layer.graph)
        else:
            total += sum(w.nbytes for w in layer._gpu_weights if not w.is_disposed)
    return total


def format_summary(model, expand_nested: bool = False, line_length: int | None = None) -> str:
    graph: Graph = model.graph
    functional = graph.kind != "Sequential"
    columns = COLUMNS if functional else tuple(c for c in COLUMNS if c != "Connected to")
    rows, notes = [], []
    for row in _rows(graph, _summary_layers(graph), expand_nested, functional):
        rows.append(row[:5] if functional else row[:3] + row[4:5])
        notes.append(row[5])
    # The table fits `line_length`, else the terminal (text_table.py): cells wrap where needed.
    target = line_length or text_table.terminal_width()
    floors = [_COLUMN_FLOORS[c] for c in columns]
    numeric = columns.index("Param #")
    shape = columns.index("Output Shape")
    table, width = text_table.render(columns, rows, notes, target, floors, keep_whole=(shape, numeric),
                                     right_aligned=(numeric,))
    total = model.count_params()
    weights = weight_bytes_on_gpu(graph)
    out = text_table.wrap_text(f'Model: "{model.name}" ({graph.kind}, Keras {model.keras_major} '
                               f"file {model.source})", max(width, target))
    out += ["_" * width] + table
    out += ["=" * width,
            f"Total params: {total:,} ({_human_bytes(total * 4)})",
            f"Weights on the GPU: {_human_bytes(weights)} (after packing and folding at load)"]
    out += [piece for line in precision_lines(graph) + half_lines(model) + plan_lines(model)
            for piece in text_table.wrap_text(line, max(width, target))]
    out += ["_" * width]
    return "\n".join(out)


# Dtype policies that ask Keras to compute in 16 bits.
HALF_POLICIES = ("float16", "bfloat16", "mixed_float16", "mixed_bfloat16")


def half_precision_layers(graph: Graph) -> dict:
    """Layer name -> the 16-bit dtype policy its config asks for (nested models included)."""
    found = {}
    for name, layer in graph.layers.items():
        inner = getattr(layer, "nested_graph", None)
        if inner is not None:
            found.update(half_precision_layers(inner))
        policy = (getattr(layer, "config", None) or {}).get("dtype")
        if isinstance(policy, str) and policy in HALF_POLICIES:
            found[name] = policy
    return found


def precision_lines(graph: Graph) -> list[str]:
    """What the file asked for where it is not what kerasgl computes: a float16 / mixed dtype
    policy runs in float32 here (docs/limitations.md gives the measured difference)."""
    half = half_precision_layers(graph)
    if not half:
        return []
    policies = sorted(set(half.values()))
    return [f"Precision: the file asks for {' / '.join(policies)} in {len(half)} layer(s); "
            "kerasgl computes them in float32 (closer to the float32 model than Keras's 16-bit "
            "result is: docs/limitations.md)"]


def half_lines(model) -> list[str]:
    """What load_model was asked to keep as float16 (docs/float16.md): the large weight matrices
    (storage_dtype), the activations between layers (activation_dtype); nothing when neither."""
    parts = []
    if getattr(model, "storage_dtype", "float32") == "float16":
        parts.append('large weight matrices stored as float16 (storage_dtype="float16")')
    if getattr(model, "activation_dtype", "float32") == "float16":
        parts.append('activations between layers kept as float16 (activation_dtype="float16")')
    if not parts:
        return []
    return [f"float16: {'; '.join(parts)}; the arithmetic is float32 (docs/float16.md)"]


# The narrowest each column becomes before the table stays wider than the terminal.
_COLUMN_FLOORS = {"Layer (type)": 22, "Output Shape": 14, "Param #": 7, "Connected to": 14,
                  "Shaders": 12}



def plan_lines(model) -> list[str]:
    """Each recent input shape's execution plan (plan.py): the planned memory for intermediates
    next to the peak of live bytes and the naive sum, or why predict runs eagerly."""
    infos = model._plans.info()
    if not infos:
        return ["Execution plans: none yet (one is compiled at the first predict calls of each "
                "input shape)"]
    return ["Execution plans:"] + [f"  {info}" for info in infos]
