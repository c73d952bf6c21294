"""Who owns each GL object, and when it dies.

Only this module decides when a GL object is deleted. Every buffer, texture and program kerasgl
creates is registered here with its kind, size and GL name, and deleted by `release()` at once when
its owner lets go: a tensor's dispose, the end of a `tidy` scope, a model's dispose. Python's
garbage collector plays no part (the context runs with moderngl's automatic collection off).

Tensors share storage when one is a view of another (reshape): storage is reference-counted by the
tensors that use it, and its GL object dies with the last of them.
"""
from __future__ import annotations

import functools
import inspect
import os
import sys
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..runtime import context
from ..errors import KerasGLError

LEAK_TRACKING_ENV = "KERASGL_TRACK_LEAKS"
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # kerasgl/


# ---------------------------------------------------------------------------------------------
# GL objects
# ---------------------------------------------------------------------------------------------
class GLObject:
    """One GL object (buffer, texture or program) with exactly one owner."""
    __slots__ = ("kind", "handle", "glo", "nbytes", "label", "views", "__weakref__")

    def __init__(self, kind: str, handle, nbytes: int, label: str = ""):
        self.kind, self.handle, self.glo = kind, handle, int(handle.glo)
        self.nbytes, self.label = int(nbytes), label
        self.views: list | None = None   # a buffer's texture views (buffer_views.py), GLObjects
        _registry[id(self)] = self
        _names_seen[kind] = max(_names_seen[kind], self.glo)

    @property
    def alive(self) -> bool:
        return self.handle is not None

    def release(self, report: bool = True) -> None:
        """Delete the GL object now. Releasing twice is harmless. `report`: tell an active plan
        recorder (not for a buffer's view, which goes with its buffer and is not the recorder's)."""
        if self.handle is None:
            return
        context.get_context()  # the GL call must come from the context's thread
        if self.views:
            # First: GL would keep the buffer's memory alive while a texture refers to it.
            for view in self.views:
                view.release(report=False)
        self.views = None
        if self.kind == "program":
            # GL only flags the program in use for deletion; unbinding it makes the delete real.
            context.driver().glUseProgram(0)
        self.handle.release()
        self.handle = None
        _registry.pop(id(self), None)
        if _recorders and report:
            _recorders[-1].released(self)


_registry: dict[int, GLObject] = {}
PLAN_LABEL = "plan"                 # labels of GL objects an execution plan owns start with this
_names_seen: Counter = Counter()   # highest GL name seen per kind, bounds the driver probe


def live_gl_objects() -> list[GLObject]:
    return list(_registry.values())


def gl_object_of(handle) -> GLObject | None:
    """The registered GLObject wrapping a moderngl handle (a linear search: for rare callers,
    such as a recorder meeting a raw buffer)."""
    for obj in _registry.values():
        if obj.handle is handle:
            return obj
    return None


# ---------------------------------------------------------------------------------------------
# Recording GPU actions (plan.py compiles a predict call from what it records)
# ---------------------------------------------------------------------------------------------
# Every GPU action reports here while a recorder is active: tensor.empty (created, with the bytes
# uploaded), GLObject.release (released), Tensor.numpy (read_back), ops/dispatch.py (dispatch,
# copy). Off, the cost is one list test per action.
_recorders: list = []


def active_recorder():
    return _recorders[-1] if _recorders else None


@contextmanager
def recording(recorder):
    """Report every GPU action made inside to `recorder` (innermost recorder wins)."""
    _recorders.append(recorder)
    try:
        yield recorder
    finally:
        _recorders.remove(recorder)


def highest_name_seen(kind: str) -> int:
    return _names_seen[kind]


class Storage:
    """A tensor's GL object, shared by the tensors that view it (reshape shares, never copies)."""
    __slots__ = ("gl", "refs")

    def __init__(self, gl: GLObject):
        self.gl, self.refs = gl, 0

    def acquire(self) -> "Storage":
        self.refs += 1
        return self

    def drop(self) -> None:
        self.refs -= 1
        if self.refs <= 0:
            self.gl.release()


# ---------------------------------------------------------------------------------------------
# Live tensors, scopes, leak tracking
# ---------------------------------------------------------------------------------------------
_live_tensors: dict[int, object] = {}    # id(tensor) -> tensor, in creation order
_scopes: list["_Scope"] = []
_tracking = [os.environ.get(LEAK_TRACKING_ENV, "") not in ("", "0", "false", "False")]


class _Scope:
    __slots__ = ("tensors",)

    def __init__(self):
        self.tensors: dict[int, object] = {}


def leak_tracking_enabled() -> bool:
    return _tracking[-1]


@contextmanager
def track_leaks(enabled: bool = True):
    """Record where each tensor created inside is made (and disposed), for leak reports and
    DisposedError messages. Off by default; KERASGL_TRACK_LEAKS=1 turns it on for the process."""
    _tracking.append(bool(enabled))
    try:
        yield
    finally:
        _tracking.pop()


def caller_site() -> str:
    """'file:line in function' of the first frame outside kerasgl (the user's call site)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def register_tensor(tensor) -> None:
    """Called by every new Tensor: track it as live and in the innermost tidy scope."""
    _live_tensors[id(tensor)] = tensor
    if _scopes:
        _scopes[-1].tensors[id(tensor)] = tensor
    if _tracking[-1]:
        tensor._created_at = caller_site()


def unregister_tensor(tensor) -> None:
    """Called by Tensor.dispose after its storage reference is dropped."""
    _live_tensors.pop(id(tensor), None)
    for scope in _scopes:
        scope.tensors.pop(id(tensor), None)
    if _tracking[-1]:
        tensor._disposed_at = caller_site()


def live_tensors() -> list:
    return list(_live_tensors.values())


def _is_tensor(value) -> bool:
    from .tensor import Tensor
    return isinstance(value, Tensor)


def _walk_tensors(value):
    """Every tensor inside a nested list / tuple / dict / set (or a single tensor)."""
    if _is_tensor(value):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk_tensors(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _walk_tensors(item)


def dispose(value) -> None:
    """Free a tensor, or every tensor in a nested list / tuple / dict of them (or anything with a
    `dispose()` method, such as a model). Disposing twice is harmless."""
    if _is_tensor(value):
        value.dispose()
        return
    tensors = list(_walk_tensors(value))
    if tensors:
        for tensor in tensors:
            tensor.dispose()
    elif hasattr(value, "dispose") and not isinstance(value, (list, tuple, dict)):
        value.dispose()


def keep(value):
    """Exempt a tensor (or the tensors in a nested structure) from every tidy scope, now and later.
    Returns its argument, so `c = keep(a + b)` reads naturally."""
    for tensor in _walk_tensors(value):
        tensor._kept = True
        for scope in _scopes:
            scope.tensors.pop(id(tensor), None)
    return value


class tidy:
    """Free every tensor created inside, except what is kept or returned.

    Three forms:
        with kg.tidy(): ...                    # context manager
        y = kg.tidy(fn, *args, **kwargs)       # call fn; tensors it returns survive
        @kg.tidy                                # decorator (for a function that takes
        def f(x): ...                           # arguments; kg.tidy.wrap for any function)
    A function of no arguments passed alone runs at once, as `tf.tidy(() => ...)` does in TF.js.
    Scopes nest. A tensor returned by the function form (anywhere inside nested lists, tuples or
    dicts) moves to the enclosing scope. If the body raises, everything created in it is freed and
    the exception propagates unchanged.
    """

    def __new__(cls, fn=None, *args, **kwargs):
        if fn is None:
            return super().__new__(cls)
        if not callable(fn):
            raise TypeError(f"tidy() takes a function or nothing, got {type(fn).__name__}")
        if args or kwargs or _takes_no_arguments(fn):
            # TF.js form: `kg.tidy(lambda: ...)` runs at once and returns the result.
            return _run_in_scope(fn, args, kwargs)
        # A function that needs arguments, passed alone: the decorator form.
        return _tidy_decorator(fn)

    @staticmethod
    def wrap(fn):
        """Explicit decorator form, also for functions of no arguments."""
        return _tidy_decorator(fn)

    def __enter__(self):
        _scopes.append(_Scope())
        return self

    def __exit__(self, exc_type, exc, tb):
        _close_scope(survivors=())
        return False


def _takes_no_arguments(fn) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in signature.parameters.values())


def _tidy_decorator(fn):
    @functools.wraps(fn)
    def scoped(*args, **kwargs):
        return _run_in_scope(fn, args, kwargs)
    return scoped


def _run_in_scope(fn, args, kwargs):
    _scopes.append(_Scope())
    try:
        result = fn(*args, **kwargs)
    except BaseException:
        _close_scope(survivors=())
        raise
    _close_scope(survivors=list(_walk_tensors(result)))
    return result


def _close_scope(survivors) -> None:
    scope = _scopes.pop()
    survivor_ids = {id(t) for t in survivors}
    for tensor_id, tensor in list(scope.tensors.items()):
        if tensor_id not in survivor_ids:
            tensor.dispose()
    if _scopes:
        for tensor in survivors:
            # Only tensors this scope owned move up: a returned tensor made outside the scope
            # (an argument, say) keeps the owner it had.
            if id(tensor) in scope.tensors and not tensor.is_disposed:
                _scopes[-1].tensors[id(tensor)] = tensor


def scope_depth() -> int:
    return len(_scopes)


# ---------------------------------------------------------------------------------------------
# memory()
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KindUsage:
    count: int
    bytes: int


@dataclass(frozen=True)
class MemoryInfo:
    """What kerasgl holds on the GPU right now. Exact: counts every live object kerasgl made."""
    num_tensors: int                 # live tensors (views of one storage count separately)
    num_bytes: int                   # bytes of tensor storage (shared storage counted once)
    gl_objects: dict = field(default_factory=dict)   # kind -> KindUsage, every GL object we own
    num_bytes_in_gpu: int = 0        # bytes of every GL object kerasgl owns (tensors, plans, ...)
    planned_bytes: int = 0           # of which held by models' execution plans (plan.py)

    @property
    def num_buffers(self) -> int:
        return self.gl_objects.get("buffer", KindUsage(0, 0)).count

    @property
    def num_textures(self) -> int:
        return self.gl_objects.get("texture", KindUsage(0, 0)).count

    @property
    def num_programs(self) -> int:
        return self.gl_objects.get("program", KindUsage(0, 0)).count

    def __str__(self) -> str:
        kinds = ", ".join(f"{k}s={u.count} ({u.bytes} B)" for k, u in sorted(self.gl_objects.items()))
        return (f"MemoryInfo(num_tensors={self.num_tensors}, num_bytes={self.num_bytes}, "
                f"num_bytes_in_gpu={self.num_bytes_in_gpu}, planned_bytes={self.planned_bytes}, "
                f"{kinds or 'no GL objects'})")


def memory() -> MemoryInfo:
    storages = {id(t._storage): t._storage for t in _live_tensors.values()}
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for obj in _registry.values():
        by_kind[obj.kind][0] += 1
        by_kind[obj.kind][1] += obj.nbytes
    return MemoryInfo(
        num_tensors=len(_live_tensors),
        num_bytes=sum(s.gl.nbytes for s in storages.values()),
        gl_objects={k: KindUsage(c, b) for k, (c, b) in by_kind.items()},
        num_bytes_in_gpu=sum(obj.nbytes for obj in _registry.values()),
        planned_bytes=sum(obj.nbytes for obj in _registry.values() if obj.label.startswith(PLAN_LABEL)),
    )


def leak_report() -> str:
    """Live tensors grouped by the site that created them (sites need leak tracking on)."""
    tensors = live_tensors()
    if not tensors:
        return "No live tensors."
    groups: dict[str, list] = defaultdict(list)
    for tensor in tensors:
        groups[getattr(tensor, "_created_at", None) or "<site unknown: leak tracking was off>"].append(tensor)
    lines = [f"{len(tensors)} live tensor(s), {memory().num_bytes} bytes:"]
    for site, group in sorted(groups.items(), key=lambda item: -len(item[1])):
        shapes = Counter(str(list(t.shape)) for t in group)
        described = ", ".join(f"{n}x {s}" if n > 1 else s for s, n in shapes.most_common(5))
        lines.append(f"  {len(group):5d} created at {site}: {described}")
    return "\n".join(lines)


class LeakError(KerasGLError):
    """Tensors were left alive where none should be (raised by kerasgl.testing)."""
