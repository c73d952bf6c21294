"""Nested structures of call arguments (lists / tuples / dicts whose leaves are TensorRefs, shapes
or constants), shared by the graph and its load-time passes (fusion.py, masks.py)."""
from __future__ import annotations

from ..saving.spec import TensorRef


def map_refs(value, fn):
    """Replace every TensorRef leaf of a nested list / tuple / dict by fn(ref)."""
    if isinstance(value, TensorRef):
        return fn(value)
    if isinstance(value, list):
        return [map_refs(v, fn) for v in value]
    if isinstance(value, tuple):
        return tuple(map_refs(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: map_refs(v, fn) for k, v in value.items()}
    return value


def refs_in(value) -> list[TensorRef]:
    found = []
    map_refs(value, lambda ref: found.append(ref) or ref)
    return found


def is_shape(value) -> bool:
    return isinstance(value, (tuple, list)) and all(d is None or isinstance(d, int) for d in value)


def output_list(shape_or_shapes) -> list[tuple]:
    """compute_output_shape's result as a list of shapes (one per output tensor)."""
    # tuple subclasses stay as they are: layers/typed_shapes.py's TypedShape carries a dtype.
    if is_shape(shape_or_shapes):
        return [shape_or_shapes if isinstance(shape_or_shapes, tuple) else tuple(shape_or_shapes)]
    if isinstance(shape_or_shapes, (list, tuple)) and all(is_shape(s) for s in shape_or_shapes):
        return [s if isinstance(s, tuple) else tuple(s) for s in shape_or_shapes]
    if isinstance(shape_or_shapes, dict):
        return [tuple(s) for s in shape_or_shapes.values()]
    raise TypeError(f"compute_output_shape returned {shape_or_shapes!r}, not a shape or shapes.")


def format_shape(shape) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
