"""The one headless OpenGL context kerasgl runs on, and what the driver says about it.

Only this module creates the GL context. It is created lazily, on first use, through EGL with
OpenGL 4.3 or newer (compute shaders and SSBOs), and it belongs to the thread that created it:
OpenGL contexts are current on one thread only, so a call from another thread is refused with a
clear error rather than corrupting state.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import threading
from dataclasses import dataclass

from .. import devices
from .. import settings
from . import egl_devices
from ..errors import GLContextError, SettingError

DEVICE_ENV = settings.SETTINGS["egl_device"].name

_INSTALL_HINT = (
    "kerasgl needs OpenGL 4.3+ through EGL. On Debian/Ubuntu install Mesa's EGL and DRI drivers "
    "(software rendering works everywhere): `apt-get install libegl1 libgl1 libgl1-mesa-dri "
    "libegl-mesa0`; for an NVIDIA GPU, the NVIDIA driver's EGL library (libEGL_nvidia)."
)

_ctx = None
_owner_thread: int | None = None
_device_index: int | None = None
_gl: "_DriverGL | None" = None
_policy: "devices.DevicePolicy | None" = None
_lock = threading.Lock()


def select_device(index: int) -> None:
    """Choose the EGL device (GPU) by index, for machines with several. Must be called before
    the first GPU operation; the environment variable KERASGL_EGL_DEVICE does the same."""
    global _device_index
    if _ctx is not None:
        raise GLContextError(
            f"select_device({index}) must be called before the first GPU operation; the context "
            f"already runs on EGL device {_device_index or 0}.")
    _device_index = int(index)


def _requested_device() -> int | None:
    if _device_index is not None:
        return _device_index
    try:
        named = settings.get("egl_device")
    except SettingError as exc:      # no context can be made: the error GL users catch
        raise GLContextError(str(exc)) from exc
    # None asked for by name: the GPU the environment gives this process (egl_devices.py).
    return named if named is not None else egl_devices.assigned().index


def get_context():
    """The moderngl context, created on first use. Raises GLContextError when GL is unusable or
    when called from a thread other than the one that created it."""
    global _ctx, _owner_thread, _gl, _policy
    if _ctx is not None:
        if threading.get_ident() != _owner_thread:
            raise GLContextError(
                "kerasgl's OpenGL context belongs to the thread that created it "
                f"(thread id {_owner_thread}); it was used from thread id {threading.get_ident()}. "
                "Run all kerasgl calls on one thread.")
        return _ctx
    with _lock:
        if _ctx is not None:
            return get_context()
        try:
            import moderngl
        except ImportError as exc:  # pragma: no cover - a dependency, always installed
            raise GLContextError(f"moderngl is not installed ({exc}). {_INSTALL_HINT}") from exc
        settings = {"standalone": True, "backend": "egl", "require": 430}
        device = _requested_device()
        if device is not None:
            settings["device_index"] = device
        threads_before = devices.thread_names()      # a driver's workers appear while it starts
        try:
            ctx = moderngl.create_context(**settings)
        except Exception as exc:
            raise GLContextError(
                f"Could not create a headless OpenGL 4.3 context through EGL"
                f"{'' if device is None else f' on device {device}'}: {exc}. {_INSTALL_HINT}"
            ) from exc
        # What this driver needs done that no other may run (kerasgl/devices/), picked once.
        renderer = ctx.info["GL_RENDERER"]
        try:
            chosen = devices.policy_for(renderer)
        except SettingError as exc:
            ctx.release()
            raise GLContextError(str(exc)) from exc
        # Objects die when kerasgl releases them, never when Python collects a wrapper.
        ctx.gc_mode = None
        _ctx, _owner_thread, _policy = ctx, threading.get_ident(), chosen
        _gl = _DriverGL()
        chosen.context_created(devices.ContextFacts(renderer, ctx.info["GL_VERSION"],
                                                    threads_before))
        return _ctx


def policy() -> "devices.DevicePolicy":
    """The device policy the context picked when it was made (kerasgl/devices/), the context
    made on first use: the only way the core learns what its driver needs."""
    if _ctx is None:
        get_context()
    return _policy


def check_thread() -> None:
    """Raise GLContextError when called from a thread other than the context's owner (cheap: no
    GL call). Tensors call it before touching their GL objects."""
    if _owner_thread is not None and threading.get_ident() != _owner_thread:
        get_context()


def has_context() -> bool:
    """Whether the GL context has been created (without creating it)."""
    return _ctx is not None


def driver() -> "_DriverGL":
    """Raw GL entry points through ctypes, for asking the driver itself (not moderngl)."""
    get_context()
    return _gl


@dataclass(frozen=True)
class Limits:
    max_ssbo_block_bytes: int
    max_ssbo_bindings: int
    max_texture_size: int
    max_work_group_size: tuple
    max_work_group_count: tuple
    max_work_group_invocations: int
    max_shared_memory_bytes: int


@dataclass(frozen=True)
class Info:
    vendor: str
    renderer: str
    version: str
    glsl_version: str
    egl_device: int
    limits: Limits
    # As the device policy reports them (devices/policy.py): the CPU threads the driver's compute
    # dispatches run on, where known (None elsewhere; 0 = inline), the CPUs they were pinned to
    # (() = not pinned), and what the policy does, in words for `kerasgl info`.
    compute_threads: int | None = None
    pinned_cpus: tuple = ()
    driver_notes: tuple = ()

    def __str__(self) -> str:
        lim = self.limits
        return "\n".join([
            f"vendor:    {self.vendor}",
            f"renderer:  {self.renderer}",
            f"version:   {self.version} (GLSL {self.glsl_version})",
            f"device:    EGL device {self.egl_device}",
            *self.driver_notes,
            f"max SSBO block size:       {lim.max_ssbo_block_bytes} bytes",
            f"max SSBO bindings:         {lim.max_ssbo_bindings}",
            f"max texture size:          {lim.max_texture_size}",
            f"max work group size:       {lim.max_work_group_size}",
            f"max work group count:      {lim.max_work_group_count}",
            f"max work group invocations: {lim.max_work_group_invocations}",
            f"max shared memory:         {lim.max_shared_memory_bytes} bytes",
        ])


_limits: Limits | None = None


def limits() -> Limits:
    """The driver limits that matter to kerasgl, read once; the storage block lowered to
    KERASGL_MAX_STORAGE_BLOCK where that is set and lower (testing the splitting of weights)."""
    global _limits
    lowered = settings.get("max_storage_block")
    if lowered is not None and _limits is not None and lowered < _limits.max_ssbo_block_bytes:
        return dataclasses.replace(_limits, max_ssbo_block_bytes=lowered)
    if _limits is None:
        gl = driver()
        _limits = Limits(
            max_ssbo_block_bytes=gl.get_integer(0x90DE),        # GL_MAX_SHADER_STORAGE_BLOCK_SIZE
            max_ssbo_bindings=gl.get_integer(0x90DD),           # GL_MAX_SHADER_STORAGE_BUFFER_BINDINGS
            max_texture_size=gl.get_integer(0x0D33),            # GL_MAX_TEXTURE_SIZE
            max_work_group_size=tuple(gl.get_integer_i(0x91BF, i) for i in range(3)),
            max_work_group_count=tuple(gl.get_integer_i(0x91BE, i) for i in range(3)),
            max_work_group_invocations=gl.get_integer(0x90EB),
            max_shared_memory_bytes=gl.get_integer(0x8262),     # GL_MAX_COMPUTE_SHARED_MEMORY_SIZE
        )
        if lowered is not None:
            return limits()
    return _limits


def info() -> Info:
    """Vendor, renderer, GL version and limits of the GPU kerasgl runs on."""
    ctx = get_context()
    return Info(
        vendor=ctx.info["GL_VENDOR"], renderer=ctx.info["GL_RENDERER"],
        version=ctx.info["GL_VERSION"],
        glsl_version=driver().get_string(0x8B8C),  # GL_SHADING_LANGUAGE_VERSION
        egl_device=_requested_device() or 0, limits=limits(),
        compute_threads=_policy.compute_threads(), pinned_cpus=_policy.pinned_cpus(),
        driver_notes=_policy.driver_notes())


# glObjectLabel's identifier for each kind of GLObject: GL_BUFFER, GL_TEXTURE, GL_PROGRAM.
_LABEL_IDENTIFIERS = {"buffer": 0x82E0, "texture": 0x1702, "program": 0x82E2, "query": 0x82E3}


class _DriverGL:
    """A few GL functions called directly through ctypes, looked up with eglGetProcAddress so they
    reach whichever driver (Mesa, NVIDIA, ...) owns the current EGL context. Used to check our own
    bookkeeping against the driver (glIsBuffer etc.) and to read limits moderngl does not expose."""

    def __init__(self):
        path = ctypes.util.find_library("EGL") or "libEGL.so.1"
        egl = ctypes.CDLL(path)
        egl.eglGetProcAddress.restype = ctypes.c_void_p
        egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]

        def fn(name, restype, *argtypes):
            address = egl.eglGetProcAddress(name.encode())
            if not address:
                raise GLContextError(f"The GL driver does not provide {name}.")
            return ctypes.CFUNCTYPE(restype, *argtypes)(address)

        u32, i32 = ctypes.c_uint, ctypes.c_int
        self.glIsBuffer = fn("glIsBuffer", ctypes.c_ubyte, u32)
        self.glIsTexture = fn("glIsTexture", ctypes.c_ubyte, u32)
        self.glIsProgram = fn("glIsProgram", ctypes.c_ubyte, u32)
        self.glIsShader = fn("glIsShader", ctypes.c_ubyte, u32)
        self.glUseProgram = fn("glUseProgram", None, u32)
        self._glGetIntegerv = fn("glGetIntegerv", None, u32, ctypes.POINTER(i32))
        self._glGetIntegeri_v = fn("glGetIntegeri_v", None, u32, u32, ctypes.POINTER(i32))
        self._glGetString = fn("glGetString", ctypes.c_char_p, u32)
        self._glGetNamedBufferParameteriv = fn(
            "glGetNamedBufferParameteriv", None, u32, u32, ctypes.POINTER(i32))
        self._glGetTextureLevelParameteriv = fn(
            "glGetTextureLevelParameteriv", None, u32, i32, u32, ctypes.POINTER(i32))
        self.glFinish = fn("glFinish", None)
        # Texture-buffer views (buffer_views.py): GL 3.1 / 4.2 entry points, so GL 4.3 suffices.
        self.glGenTextures = fn("glGenTextures", None, i32, ctypes.POINTER(u32))
        self.glDeleteTextures = fn("glDeleteTextures", None, i32, ctypes.POINTER(u32))
        self.glBindTexture = fn("glBindTexture", None, u32, u32)
        self.glTexBuffer = fn("glTexBuffer", None, u32, u32, u32)
        self.glBindImageTexture = fn("glBindImageTexture", None, u32, u32, i32, ctypes.c_ubyte, i32,
                                     u32, u32)
        # Debug labels (GL 4.3 core, KHR_debug): every GLObject's label, for GL debuggers.
        self._glObjectLabel = fn("glObjectLabel", None, u32, u32, i32, ctypes.c_char_p)
        self._glGetObjectLabel = fn("glGetObjectLabel", None, u32, u32, i32, ctypes.POINTER(i32),
                                    ctypes.c_char_p)
        self._max_label = max(1, self.get_integer(0x82E8) - 1)   # GL_MAX_LABEL_LENGTH, less the NUL
        # Timer queries (GL 3.3 core): per-dispatch GPU timestamps for kerasgl/profiler/.
        self.glGenQueries = fn("glGenQueries", None, i32, ctypes.POINTER(u32))
        self.glDeleteQueries = fn("glDeleteQueries", None, i32, ctypes.POINTER(u32))
        self.glIsQuery = fn("glIsQuery", ctypes.c_ubyte, u32)
        self.glQueryCounter = fn("glQueryCounter", None, u32, u32)
        self.glGetQueryiv = fn("glGetQueryiv", None, u32, u32, ctypes.POINTER(i32))
        self.glGetQueryObjectui64v = fn("glGetQueryObjectui64v", None, u32, u32,
                                        ctypes.POINTER(ctypes.c_uint64))
        self.glGetInteger64v = fn("glGetInteger64v", None, u32, ctypes.POINTER(ctypes.c_int64))
        # A linked program's facts moderngl does not expose (program_facts.py: work group size).
        self.glGetProgramiv = fn("glGetProgramiv", None, u32, u32, ctypes.POINTER(i32))

    def set_label(self, kind: str, glo: int, label: str) -> None:
        """Name GL object `glo` of kind 'buffer' / 'texture' / 'program' for debuggers (cut to
        GL_MAX_LABEL_LENGTH: a longer label would be refused)."""
        self._glObjectLabel(_LABEL_IDENTIFIERS[kind], glo, -1, label.encode()[:self._max_label])

    def label(self, kind: str, glo: int) -> str:
        """The label the driver holds for GL object `glo` ('' if none)."""
        size = self._max_label + 1
        out, length = ctypes.create_string_buffer(size), ctypes.c_int(0)
        self._glGetObjectLabel(_LABEL_IDENTIFIERS[kind], glo, size, ctypes.byref(length), out)
        return out.value[:length.value].decode(errors="replace")

    def get_integer(self, pname: int) -> int:
        out = ctypes.c_int(0)
        self._glGetIntegerv(pname, ctypes.byref(out))
        return out.value

    def get_integer_i(self, pname: int, index: int) -> int:
        out = ctypes.c_int(0)
        self._glGetIntegeri_v(pname, index, ctypes.byref(out))
        return out.value

    def get_string(self, name: int) -> str:
        value = self._glGetString(name)
        return value.decode() if value else ""

    def buffer_size(self, glo: int) -> int:
        """GL_BUFFER_SIZE of a live buffer, as the driver reports it."""
        out = ctypes.c_int(0)
        self._glGetNamedBufferParameteriv(glo, 0x8764, ctypes.byref(out))
        return out.value

    def texture_extent(self, glo: int) -> tuple[int, int, int, int]:
        """(width, height, internal format, data-store buffer) of level 0 of a live texture; the
        buffer is 0 except for a texture-buffer view, whose memory is that buffer's."""
        values = []
        # WIDTH, HEIGHT, INTERNAL_FORMAT, TEXTURE_BUFFER_DATA_STORE_BINDING
        for pname in (0x1000, 0x1001, 0x1003, 0x8C2D):
            out = ctypes.c_int(0)
            self._glGetTextureLevelParameteriv(glo, 0, pname, ctypes.byref(out))
            values.append(out.value)
        return tuple(values)


# -------------------------------------------------------------------------------------------------
# Closing the context (kg.shutdown)
# -------------------------------------------------------------------------------------------------
# The layers above this module hold the GL objects (the object registry, tensors, the program
# cache, models and their plans); this module may not import them, so each registers here what
# frees its objects, and shutdown() calls those before destroying the context. Last registered
# runs first: a module registers when it is imported, after the modules it imports, so models
# let go before tensors and tensors before the registry's leftovers.
_release_hooks: list = []
_census = None


def on_shutdown(release) -> None:
    """Have shutdown() call `release()` (no arguments) to free GL objects held above this module.
    Registering the same function twice registers it once."""
    if release not in _release_hooks:
        _release_hooks.append(release)


def set_shutdown_census(count) -> None:
    """Have shutdown() call `count()` after every release hook and before the context goes, for
    the driver's own count of the GL objects it still holds ({kind: number}; driver_objects.py)."""
    global _census
    _census = count


def shutdown() -> dict | None:
    """Close the GL context: free every GL object kerasgl holds (tensors, model weights, execution
    plans, compiled programs, texture views), then destroy the context itself. Live tensors and
    models are disposed (using one afterwards raises DisposedError). The next kerasgl call, from
    any thread, creates a fresh context; select_device() may be called again before it.

    Returns what the driver still counted just before the context was destroyed ({'buffer': 0,
    'texture': 0, 'program': 0} when everything was released), or None when there was no
    context. Must be called on the thread that owns the context (GLContextError otherwise): for a
    context owned by a kg.Worker, close the worker (it calls this on its thread)."""
    global _ctx, _owner_thread, _gl, _policy, _limits
    if _ctx is None:
        return None
    get_context()                       # refuses other threads before anything is freed
    for release in reversed(list(_release_hooks)):
        release()
    left = dict(_census()) if _census is not None else {}
    with _lock:
        ctx = _ctx
        _ctx, _owner_thread, _gl, _policy, _limits = None, None, None, None, None
    # Not current any more first: EGL destroys a context still current on a thread only once
    # it is unbound, which would never happen on a thread that is ending (a worker's).
    ctx.__exit__(None, None, None)
    ctx.release()
    return left


def device_choice() -> "egl_devices.DeviceChoice":
    """The EGL device the context opens (or opened) and why: select_device(), KERASGL_EGL_DEVICE,
    else the GPU the environment assigns (CUDA_VISIBLE_DEVICES ...: egl_devices.py)."""
    if _device_index is not None:
        return egl_devices.DeviceChoice(_device_index, f"select_device({_device_index})")
    named = settings.get("egl_device")
    if named is not None:
        return egl_devices.DeviceChoice(named, f"{DEVICE_ENV}={named}")
    return egl_devices.assigned()
