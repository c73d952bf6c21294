"""Who holds each GL byte: every live GL object kerasgl made, by owner, for memory() and the
GL-object dump (kerasgl/gl_dump.py).

    tensors        the storage of live tensors that are no model's weights (yours, predict's)
    model weights  the weight tensors of loaded models (and of models dropped undisposed)
    plan buffers   execution plans' shared buffers, textures and constants (plans/: kept
                   between predict calls, per model and input shape, until released)
    programs       compiled shader programs (GL reports no size: 0 bytes)
    views          texture views of buffers (runtime/buffer_views.py: 0 bytes, the memory is the
                   buffer's)
    queries        the profiler's timer queries (kerasgl/profiler/: only inside kg.profile())
    other          anything else registered (none in kerasgl itself)
"""
from __future__ import annotations

from ..runtime.buffer_views import TextureBufferView
from ..runtime.objects import PLAN_LABEL
from . import model_registry

OWNERS = ("tensors", "model weights", "plan buffers", "programs", "views", "queries")
# What each owner is, in the words memory() prints next to it (a view or a texture a script never
# made should say whose it is).
MEANING = {
    "tensors": "live tensors that are no model's weights (yours, predict's results)",
    "model weights": "the weights of loaded models (and of models dropped undisposed)",
    "plan buffers": "execution plans' buffers, kept between predict calls until released",
    "programs": "compiled shaders, cached by kerasgl (the driver reports no size)",
    "views": "texture views kernels read buffers through (runtime/buffer_views.py); the memory "
             "is their buffer's, and they go with it",
    "queries": "the profiler's timer queries (only inside kg.profile())",
    "other": "other registered GL objects",
}


def weight_objects() -> set:
    """id() of the GL objects holding the weights of loaded (or dropped, still held) models."""
    found = set()
    for model in model_registry.live_models():
        found.update(id(t._storage.gl) for t in model._gpu_tensors())
    for _, _, tensors in model_registry.dropped_models():
        found.update(id(t._storage.gl) for t in tensors)
    return found


def owner_of(obj, tensor_objects: set, weights: set) -> str:
    if obj.kind == "program":
        return "programs"
    if obj.kind == "query":
        return "queries"
    if isinstance(obj.handle, TextureBufferView):
        return "views"
    if obj.label.startswith(PLAN_LABEL):
        return "plan buffers"
    if id(obj) in weights:
        return "model weights"
    if id(obj) in tensor_objects:
        return "tensors"
    return "other"


def by_owner(objects, tensor_objects: set) -> dict:
    """owner -> (count, bytes) of `objects` (live GLObjects); `tensor_objects`: id() of the GL
    objects of live tensors' storage. Every owner of OWNERS is present; "other" only if any."""
    weights = weight_objects()
    found = {owner: [0, 0] for owner in OWNERS}
    for obj in objects:
        usage = found.setdefault(owner_of(obj, tensor_objects, weights), [0, 0])
        usage[0] += 1
        usage[1] += obj.nbytes
    return {owner: (count, nbytes) for owner, (count, nbytes) in found.items()}


__all__ = ["OWNERS", "by_owner", "owner_of", "weight_objects"]
