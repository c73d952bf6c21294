"""The compile-ahead helper process's body: `python -m kerasgl.compile_ahead_child MODEL_FILE`.

llvmpipe's policy starts it while load_model loads the same file (kerasgl/devices/llvmpipe/
compile_ahead.py says why and when): it runs every layer once on zeros, last layer first, so that
the shaders the first predict will need are compiled into Mesa's disk cache by a second CPU. It
lives here, at the top of the package, because it loads a model and runs its layers: work of the
layers above kerasgl/devices/, which may not import it.
"""
from __future__ import annotations

import sys

import numpy as np

from .compiler.graph import NestedModel, map_refs
from .devices.llvmpipe.compile_ahead import die_with_parent
from .model import load_model
from .tensors.ownership import tidy
from .tensors.tensor import tensor


def compile_backwards(path: str) -> int:
    """Load the model and run each of its layers once on zeros of its batch-1 input shapes, last
    layer first. Returns the number of layers run (a layer that refuses zeros is skipped)."""
    model = load_model(path)
    input_dtypes = dict(zip(model.graph.input_refs, (s.dtype for s in model.inputs)))
    done = 0
    for graph, node in _backwards(model.graph):
        def zeros(ref, graph=graph):
            shape = tuple(1 if d is None else d for d in graph.shapes[ref])
            return tensor(np.zeros(shape, input_dtypes.get(ref, "float32")))
        try:
            with tidy():
                node.layer.call(*map_refs(node.args, zeros), **map_refs(node.kwargs, zeros))
            done += 1
        except Exception:       # noqa: BLE001 - a warm-up only: the real predict reports errors
            continue
    model.dispose()
    return done


def _backwards(graph):
    """(graph, node) for every layer call, last first, models nested as layers entered (their
    own layers last first too)."""
    for node in reversed(graph.needed_nodes(list(graph.output_refs))):
        if isinstance(node.layer, NestedModel):
            yield from _backwards(node.layer.graph)
        else:
            yield graph, node


def main(path: str) -> None:
    die_with_parent()
    compile_backwards(path)


if __name__ == "__main__":
    main(sys.argv[1])
