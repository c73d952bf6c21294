"""Who owns each tensor, and when its GL object dies.

A tensor's GL object (registered in kerasgl/runtime/objects.py) is released at once when its owner
lets go: the tensor's dispose, the end of a `tidy` scope, a model's dispose. Python's garbage
collector plays no part (the context runs with moderngl's automatic collection off).

Tensors share storage when one is a view of another (reshape): storage is reference-counted by the
tensors that use it, and its GL object dies with the last of them.

Scopes belong to a thread: each thread has its own stack of tidy scopes, and a tensor goes into
the innermost scope of the thread that creates it. A scope entered on one thread never captures
(nor frees) what another thread makes, so a kg.Worker's thread and the threads that submit work
to it each keep their own scopes. This module knows tensors only
as `Owned` (Tensor's base class, tensor.py), so that it needs nothing above it.
"""
from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import types
from collections import Counter, defaultdict
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from .. import settings
from ..runtime import context
from ..runtime.objects import PLAN_LABEL, GLObject, live_gl_objects
from ..errors import InputTypeError, KerasGLError
from . import gl_owners, model_registry

LEAK_TRACKING_ENV = settings.SETTINGS["track_leaks"].name
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # kerasgl/


class Owned:
    """What ownership.py tracks: a value holding a reference to a Storage (Tensor subclasses it;
    dispose / keep / tidy find tensors inside nested structures by this class)."""
    __slots__ = ()


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
# id(tensor) -> the scope that owns it (whichever thread's), for the tensors a scope holds: a
# tensor disposed or kept (on any thread) leaves its owner's scope without a search.
_owner: dict[int, "_Scope"] = {}
_thread_state = threading.local()     # .scopes: this thread's stack of scopes, innermost last


class _Scope:
    __slots__ = ("tensors", "name")

    def __init__(self, name: str | None = None):
        self.tensors: dict[int, object] = {}
        self.name = name          # tidy("name", ...): shown where leak reports name a site

    def adopt(self, tensor) -> None:
        self.tensors[id(tensor)] = tensor
        _owner[id(tensor)] = self

    def release(self, tensor_id: int) -> None:
        """The tensor is no longer this scope's."""
        self.tensors.pop(tensor_id, None)
        if _owner.get(tensor_id) is self:
            del _owner[tensor_id]


def _scopes() -> list:
    """The calling thread's stack of scopes (made empty on a thread's first use)."""
    try:
        return _thread_state.scopes
    except AttributeError:
        _thread_state.scopes = []
        return _thread_state.scopes


def leak_tracking_enabled() -> bool:
    return settings.get("track_leaks")


@contextmanager
def track_leaks(enabled: bool = True):
    """Record where each tensor created inside is made (and disposed), for leak reports and
    DisposedError messages. Off by default; KERASGL_TRACK_LEAKS=1 turns it on for the process."""
    with settings.override(track_leaks=bool(enabled)):
        yield


def caller_site() -> str:
    """'file:line in function' of the first frame outside kerasgl (the user's call site)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def register_tensor(tensor) -> None:
    """Called by every new Tensor: track it as live and in the calling thread's innermost tidy
    scope."""
    _live_tensors[id(tensor)] = tensor
    scopes = _scopes()
    if scopes:
        scopes[-1].adopt(tensor)
    if settings.get("track_leaks"):
        named = next((s.name for s in reversed(scopes) if s.name), None)
        tensor._created_at = caller_site() + (f" (in tidy {named!r})" if named else "")


def unregister_tensor(tensor) -> None:
    """Called by Tensor.dispose after its storage reference is dropped."""
    _live_tensors.pop(id(tensor), None)
    owner = _owner.get(id(tensor))
    if owner is not None:
        owner.release(id(tensor))
    if settings.get("track_leaks"):
        tensor._disposed_at = caller_site()


def live_tensors() -> list:
    return list(_live_tensors.values())


def dispose_all() -> None:
    """Dispose of every live tensor, kept ones too (kg.shutdown: the context is going)."""
    for tensor in live_tensors():
        tensor.dispose()


context.on_shutdown(dispose_all)


def _is_tensor(value) -> bool:
    return isinstance(value, Owned)


def _walk_tensors(value, owners: list | None = None):
    """Every tensor inside what a Python user returns or hands over: a tensor, lists, tuples
    (namedtuples too), dicts and other mappings, sets, dataclasses, and objects whose attributes
    hold tensors (TF.js walks a returned object's fields), at any depth; each object visited once
    (cycles end), numbers, strings, arrays, functions, classes and modules not entered. Given a
    list `owners`, an object with a dispose() method of its own (a model) is put there instead of
    entered: it frees what it holds itself."""
    seen, stack = set(), [value]
    while stack:
        item = stack.pop()
        if _is_tensor(item):
            yield item
            continue
        if isinstance(item, _LEAVES) or id(item) in seen:
            continue
        seen.add(id(item))
        if owners is not None and callable(getattr(item, "dispose", None)) \
                and not isinstance(item, (Mapping, list, tuple, set, frozenset)):
            owners.append(item)
        elif isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(reversed(list(item)))
        elif hasattr(item, "__dict__") and not isinstance(item, _NOT_WALKED):
            stack.extend(reversed(list(vars(item).values())))
        elif hasattr(type(item), "__slots__"):
            stack.extend(getattr(item, slot) for slot in _slots_of(type(item))
                         if hasattr(item, slot))


# Values that hold no tensor, and objects whose attributes are not the user's data.
_LEAVES = (str, bytes, bytearray, int, float, complex, bool, type(None), range, memoryview)
_NOT_WALKED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
               types.MethodType, functools.partial)


def _slots_of(cls) -> list:
    return [slot for klass in cls.__mro__ for slot in getattr(klass, "__slots__", ())
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__")]


def dispose(value) -> None:
    """Free a tensor, every tensor inside a structure of them (as tidy finds its survivors), or
    anything with a `dispose()` method, such as a model (its own dispose runs, at any depth of the
    structure). Disposing twice is harmless."""
    if _is_tensor(value):            # the common case, without the walk
        value.dispose()
        return
    owners = []
    for tensor in _walk_tensors(value, owners):
        tensor.dispose()
    for owner in owners:
        owner.dispose()


def keep(value):
    """Exempt a tensor (or the tensors in a nested structure) from every tidy scope, now and later.
    Returns its argument, so `c = keep(a + b)` reads naturally."""
    for tensor in _walk_tensors(value):
        tensor._kept = True
        owner = _owner.get(id(tensor))
        if owner is not None:
            owner.release(id(tensor))
    return value


class tidy:
    """Free every tensor created inside, except what is kept or returned: TensorFlow.js's
    `tf.tidy`, whose semantics these forms follow.

        y = kg.tidy(fn, *args, **kwargs)          # call fn now, as tf.tidy(fn) does
        y = kg.tidy("name", fn, *args, **kwargs)  # tf.tidy("name", fn): the name is shown in
                                                  # leak reports (KERASGL_TRACK_LEAKS=1)
        y = kg.tidy.run(fn, *args, **kwargs)      # the same as kg.tidy(fn, ...)
        with kg.tidy(): ...                       # context manager (kg.tidy("name") too)
        @kg.tidy()                                # decorator: each call of f runs in a scope
        def f(x): ...                             # (@kg.tidy("name") and @kg.tidy.wrap too)

    `kg.tidy(fn)` always calls fn, now. So a bare `@kg.tidy` (no parentheses) is kg.tidy(f): it
    would call f once, at the definition; where f needs arguments it raises InputTypeError
    saying to decorate with `@kg.tidy()` or `@kg.tidy.wrap` instead.

    What fn returns survives and moves to the enclosing scope: tensors anywhere inside lists,
    tuples, namedtuples, dicts, sets, dataclasses and objects' attributes. A coroutine or other
    awaitable returned is refused (InputTypeError): its work would run after the scope closed, as
    TF.js refuses a returned Promise. Scopes are per thread and nest. If the body raises,
    everything created in it is freed and the exception propagates unchanged.
    """

    def __new__(cls, fn=None, *args, **kwargs):
        name = None
        if isinstance(fn, str):
            name, fn, args = fn, (args[0] if args else None), args[1:]
        if fn is None:
            scope = super().__new__(cls)
            scope.name = name
            return scope
        return _run_now(fn, args, kwargs, name, "tidy()")

    @staticmethod
    def run(fn, *args, **kwargs):
        """Call fn(*args, **kwargs) now in a scope: what it returns survives, the rest is freed."""
        return _run_now(fn, args, kwargs, None, "tidy.run()")

    @staticmethod
    def wrap(fn):
        """The decorator by name: each call of fn runs in a scope of its own."""
        return _tidy_decorator(fn, None)

    def __call__(self, fn):
        """`@kg.tidy()` / `@kg.tidy("name")`: decorate fn."""
        return _tidy_decorator(fn, self.name)

    def __enter__(self):
        scopes = _scopes()
        scope = _Scope(self.name)
        scopes.append(scope)
        # The scope this `with` opened (a tidy object may be entered again while open).
        self.__dict__.setdefault("_opened", []).append((scopes, scope))
        return self

    def __exit__(self, exc_type, exc, tb):
        scopes, scope = self._opened.pop()
        _close_scope(scopes, scope, survivors=())
        return False


def _run_now(fn, args, kwargs, name, form):
    if not callable(fn):
        raise InputTypeError(f"{form} takes a function to run now, got {type(fn).__name__}")
    if not args and not kwargs and _needs_arguments(fn):
        raise InputTypeError(
            f"{form} runs {getattr(fn, '__name__', 'the function')} now, as tf.tidy does, but it "
            "needs arguments: pass them (kg.tidy(fn, x)), or, to decorate a function, write "
            "@kg.tidy() or @kg.tidy.wrap")
    return _run_in_scope(fn, args, kwargs, name)


def _needs_arguments(fn) -> bool:
    """Whether fn cannot be called with no arguments (False where its signature is unknown)."""
    try:
        inspect.signature(fn).bind()
    except TypeError:
        return True
    except ValueError:
        return False
    return False


def _tidy_decorator(fn, name):
    if not callable(fn):
        raise InputTypeError(f"tidy decorates a function, got {type(fn).__name__}")

    @functools.wraps(fn)
    def scoped(*args, **kwargs):
        return _run_in_scope(fn, args, kwargs, name)
    return scoped


def _run_in_scope(fn, args, kwargs, name=None):
    scopes = _scopes()
    scope = _Scope(name)
    scopes.append(scope)
    try:
        result = fn(*args, **kwargs)
    except BaseException:
        _close_scope(scopes, scope, survivors=())
        raise
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()        # never awaited: close it rather than leave Python's warning
        _close_scope(scopes, scope, survivors=())
        raise InputTypeError(
            f"tidy's function returned {type(result).__name__}, an awaitable: its work would run "
            "after the scope had freed its tensors. Run the awaitable first and tidy the "
            "synchronous part, as TensorFlow.js refuses a Promise")
    _close_scope(scopes, scope, survivors=list(_walk_tensors(result)))
    return result


def _close_scope(scopes: list, scope: _Scope, survivors) -> None:
    # The scope leaves its thread's stack first (normally its top; a scope closed out of order
    # leaves from where it is), so that nothing disposed below can register into it.
    if scopes and scopes[-1] is scope:
        scopes.pop()
    elif scope in scopes:
        scopes.remove(scope)
    survivor_ids = {id(t) for t in survivors}
    try:
        for tensor_id, tensor in list(scope.tensors.items()):
            if tensor_id not in survivor_ids:
                tensor.dispose()
    finally:
        moving = [t for t in survivors if id(t) in scope.tensors and not t.is_disposed]
        for tensor_id in list(scope.tensors):
            scope.release(tensor_id)
        if scopes:
            for tensor in moving:
                # Only tensors this scope owned move up: a returned tensor made outside the
                # scope (an argument, say) keeps the owner it had.
                scopes[-1].adopt(tensor)


def scope_depth() -> int:
    """How many tidy scopes the calling thread has open."""
    return len(_scopes())


# ---------------------------------------------------------------------------------------------
# memory()
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KindUsage:
    count: int
    bytes: int


@dataclass(frozen=True)
class MemoryInfo:
    """What kerasgl holds on the GPU right now. Exact: counts every live object kerasgl made.
    num_bytes_in_gpu is the whole; by_owner splits it (tensors/gl_owners.py): num_bytes is only
    the tensors' part (yours and the models' weights), planned_bytes the execution plans'."""
    num_tensors: int                 # live tensors (views of one storage count separately)
    num_bytes: int                   # bytes of tensor storage (shared storage counted once)
    gl_objects: dict = field(default_factory=dict)   # kind -> KindUsage, every GL object we own
    num_bytes_in_gpu: int = 0        # bytes of every GL object kerasgl owns (tensors, plans, ...)
    planned_bytes: int = 0           # of which held by models' execution plans (plan.py)
    # owner -> KindUsage: "tensors", "model weights", "plan buffers", "programs", "views",
    # "queries" (and "other" if any), summing to num_bytes_in_gpu (gl_owners.py).
    by_owner: dict = field(default_factory=dict)
    # The models loaded and not yet disposed (model_registry.ModelUsage: name, source, bytes).
    models: tuple = ()

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
        """One line per owner (the whole first: plans keep buffers between calls, which
        num_bytes, tensor storage only, does not show), each saying what it is."""
        lines = [f"MemoryInfo: {self.num_bytes_in_gpu:,} B on the GPU; {self.num_tensors} "
                 f"tensor(s) of {self.num_bytes:,} B (yours and models' weights), "
                 f"{self.planned_bytes:,} B in execution plans"]
        for owner, usage in self.by_owner.items():
            if usage.count:
                lines.append(f"  {owner:<14}{usage.bytes:>14,} B in {usage.count:>4} GL "
                             f"object(s): {gl_owners.MEANING.get(owner, owner)}")
        kinds = ", ".join(f"{u.count} {k}(s) {u.bytes:,} B" for k, u in sorted(self.gl_objects.items()))
        lines.append(f"  by kind: {kinds or 'no GL objects'}")
        lines += [f"  model '{m.name}': {m.bytes:,} B" for m in self.models]
        return "\n".join(lines)

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k}s={u.count}" for k, u in sorted(self.gl_objects.items()))
        return (f"MemoryInfo(num_bytes_in_gpu={self.num_bytes_in_gpu}, num_tensors="
                f"{self.num_tensors}, num_bytes={self.num_bytes}, planned_bytes="
                f"{self.planned_bytes}{', ' + kinds if kinds else ''}, models={len(self.models)})")


def memory() -> MemoryInfo:
    storages = {id(t._storage): t._storage for t in _live_tensors.values()}
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    objects = live_gl_objects()
    for obj in objects:
        by_kind[obj.kind][0] += 1
        by_kind[obj.kind][1] += obj.nbytes
    return MemoryInfo(
        num_tensors=len(_live_tensors),
        num_bytes=sum(s.gl.nbytes for s in storages.values()),
        gl_objects={k: KindUsage(c, b) for k, (c, b) in by_kind.items()},
        num_bytes_in_gpu=sum(obj.nbytes for obj in objects),
        planned_bytes=sum(obj.nbytes for obj in objects if obj.label.startswith(PLAN_LABEL)),
        models=model_registry.usages(),
        by_owner={owner: KindUsage(c, b) for owner, (c, b) in
                  gl_owners.by_owner(objects, {id(s.gl) for s in storages.values()}).items()},
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
    # Whose weights some of them are: models not disposed, or dropped without dispose().
    lines += model_registry.report_lines({id(t) for t in tensors})
    return "\n".join(lines)


class LeakError(KerasGLError):
    """Tensors were left alive where none should be (raised by kerasgl.testing)."""
