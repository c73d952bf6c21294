"""What a kerasgl.Model holds on the GPU, and the warning for a model dropped without dispose()
(kerasgl.Model inherits them from ModelMemory).

Freeing stays explicit: no garbage collector frees a GL object in kerasgl. When the Python object
of a model that was never disposed goes away (`del model`, a notebook cell run again), its
__del__ only warns, as Python warns for an unclosed file: a ResourceWarning naming the model and
its bytes, shown under `python -X dev`, `-W default` and in test runners. Its weight tensors are
handed to tensors/model_registry.py so that kg.leak_report() can say whose they were.
"""
from __future__ import annotations

import sys
import warnings

from .compiler.graph import NestedModel
from .tensors import model_registry


class ModelMemory:
    """Mixin of kerasgl.Model: needs its _graph, _plans, _disposed, name and source."""

    @property
    def gpu_bytes(self) -> int:
        """Bytes of GPU memory this model holds: its weights as uploaded (packed, folded) and
        the buffers of its execution plans. 0 once disposed."""
        if self._disposed:
            return 0
        planned = getattr(self._plans, "planned_bytes", 0)
        return sum(t.nbytes for t in self._gpu_tensors()) + int(planned or 0)

    def _gpu_tensors(self) -> list:
        """The weight tensors of every layer, nested models' and wrapped layers' included."""
        found, seen = [], set()
        graphs = [self._graph]
        while graphs:
            for layer in graphs.pop().layers.values():
                if isinstance(layer, NestedModel):
                    graphs.append(layer.graph)
                    continue
                for t in layer.gpu_weights():
                    if id(t) not in seen:
                        seen.add(id(t))
                        found.append(t)
        return found

    def __del__(self):
        # Warn, never free: GL objects go by dispose() alone (the garbage collector may run on a
        # thread that is not the GL context's, at any moment). Nothing is said at interpreter
        # exit, where the process's end frees everything anyway.
        if getattr(self, "_disposed", True) or sys.is_finalizing():
            return
        try:
            tensors, nbytes = self._gpu_tensors(), self.gpu_bytes
            name, source = self.name, self.source
        except Exception:      # a half-made model: nothing to say
            return
        model_registry.dropped(name, source, tensors)
        warnings.warn(f"kerasgl model '{name}' ({source}) was garbage-collected without "
                      f"dispose(): its {nbytes:,} bytes on the GPU stay allocated until the "
                      "process ends. Call model.dispose(), or load it in a `with "
                      "kg.load_model(...) as model:` block.", ResourceWarning, stacklevel=2)
        # (No `source=self`: a warning kept by a handler would bring the model back to life.)
