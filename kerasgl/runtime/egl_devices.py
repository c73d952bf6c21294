"""Which EGL device is the GPU this process was given.

Schedulers give a process its GPU through the environment: Ray, Kubernetes' NVIDIA device plugin
and Slurm set CUDA_VISIBLE_DEVICES (AMD's stacks HIP_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES). EGL
ignores those variables: it lists every GPU of the machine, in its own order, so EGL device 0 is
not the GPU a Ray actor was given, and two actors would share one GPU while the others idle. So
when no device is asked for by name (select_device, KERASGL_EGL_DEVICE), kerasgl opens the EGL
device that is the assigned GPU:

- NVIDIA: EGL_NV_device_cuda gives each EGL device its CUDA device number
  (eglQueryDeviceAttribEXT(EGL_CUDA_DEVICE_NV)). The CUDA driver applies CUDA_VISIBLE_DEVICES to
  that numbering, so the assigned GPU is the device reporting CUDA device 0 (the first visible);
  a driver reporting unmasked numbers instead is met by the device reporting the first listed
  number.
- Otherwise (Mesa's radeonsi, iris, ...): the GPUs with a DRM render node (EGL_EXT_device_drm,
  EGL_EXT_device_drm_render_node), in render-node order (/dev/dri/renderD128, 129, ...), and the
  first listed number picks among them.
- A variable that is set but empty ("", "-1", "NoDevFiles": Ray's actors with num_gpus=0, for
  one) gives the process no GPU: the software device (llvmpipe) when there is one.

The choice is a pure function of the device list and the environment (`choose`), so it is tested
on made-up lists; `devices()` reads the real list through libEGL (no GL context needed).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
from dataclasses import dataclass

ASSIGNMENT_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
_NO_DEVICE_VALUES = ("", "-1", "nodevfiles", "none", "void")

EGL_EXTENSIONS = 0x3055
EGL_DRM_DEVICE_FILE_EXT = 0x3233
EGL_DRM_RENDER_NODE_FILE_EXT = 0x3377
EGL_CUDA_DEVICE_NV = 0x323A
_MAX_DEVICES = 32


@dataclass(frozen=True)
class EGLDevice:
    """One EGL device as the driver describes it (eglQueryDevicesEXT's order gives `index`)."""
    index: int
    extensions: tuple = ()
    cuda_device: int | None = None     # EGL_CUDA_DEVICE_NV, where EGL_NV_device_cuda answers
    drm_file: str | None = None        # EGL_DRM_DEVICE_FILE_EXT (/dev/dri/card1)
    render_node: str | None = None     # EGL_DRM_RENDER_NODE_FILE_EXT (/dev/dri/renderD129)

    @property
    def software(self) -> bool:
        return "EGL_MESA_device_software" in self.extensions

    def describe(self) -> str:
        parts = [f"EGL device {self.index}"]
        if self.software:
            parts.append("software")
        if self.cuda_device is not None:
            parts.append(f"CUDA device {self.cuda_device}")
        if self.render_node or self.drm_file:
            parts.append(self.render_node or self.drm_file)
        return parts[0] + (f" ({', '.join(parts[1:])})" if len(parts) > 1 else "")


@dataclass(frozen=True)
class DeviceChoice:
    """The EGL device to open (None: the driver's default, device 0) and why."""
    index: int | None
    reason: str


def _render_minor(device: EGLDevice) -> int:
    found = re.search(r"(\d+)$", device.render_node or "")
    return int(found.group(1)) if found else 1 << 30


def choose(devices: list[EGLDevice], environ) -> DeviceChoice:
    """The EGL device that is the GPU `environ` assigns (see the module docstring)."""
    variable = next((name for name in ASSIGNMENT_VARIABLES if environ.get(name) is not None), None)
    if variable is None:
        return DeviceChoice(None, "no GPU assigned in the environment (CUDA_VISIBLE_DEVICES "
                                  "unset): the driver's default, EGL device 0")
    value = environ[variable].strip()
    setting = f"{variable}={value!r}"
    entries = [e.strip() for e in value.split(",") if e.strip()]
    if value.lower() in _NO_DEVICE_VALUES or not entries:
        software = next((d for d in devices if d.software), None)
        if software is not None:
            return DeviceChoice(software.index, f"{setting} gives this process no GPU: the "
                                                f"software device, {software.describe()}")
        return DeviceChoice(None, f"{setting} gives this process no GPU, and there is no "
                                  "software EGL device: the driver's default, EGL device 0")
    first = entries[0]
    number = int(first) if first.isdigit() else None
    nvidia = [d for d in devices if d.cuda_device is not None]
    if nvidia and variable == "CUDA_VISIBLE_DEVICES":
        if len(nvidia) <= len(entries):
            # As many GPUs answer as are visible: CUDA's numbering with the mask applied, where
            # the first visible GPU is CUDA device 0.
            match = next((d for d in nvidia if d.cuda_device == 0), None)
            if match is not None:
                return DeviceChoice(match.index, f"{setting}: the first visible GPU is CUDA "
                                                 f"device 0 of this process, {match.describe()} "
                                                 "(EGL_NV_device_cuda)")
        else:
            # More GPUs answer than are visible: the driver numbers them all, unmasked.
            match = next((d for d in nvidia if d.cuda_device == number), None)
            if match is not None:
                return DeviceChoice(match.index, f"{setting}: GPU {number} is {match.describe()} "
                                                 "(EGL_NV_device_cuda, unmasked numbering)")
    hardware = sorted((d for d in devices if d.render_node and not d.software), key=_render_minor)
    if number is not None and number < len(hardware):
        match = hardware[number]
        return DeviceChoice(match.index, f"{setting}: GPU {number} in render-node order is "
                                         f"{match.describe()} (no EGL_NV_device_cuda answer)")
    listed = ", ".join(d.describe() for d in devices) or "none"
    return DeviceChoice(None, f"{setting}: no EGL device matches GPU {first!r} (EGL devices: "
                              f"{listed}): the driver's default, EGL device 0")


# -------------------------------------------------------------------------------------------------
# The real device list, through libEGL
# -------------------------------------------------------------------------------------------------
_devices: list[EGLDevice] | None = None


def devices() -> list[EGLDevice]:
    """The EGL devices of this machine, in eglQueryDevicesEXT's order (the order moderngl's
    device_index counts in); [] where libEGL or its device extensions are missing. Read once."""
    global _devices
    if _devices is None:
        try:
            _devices = _query_devices()
        except (OSError, AttributeError):
            _devices = []
    return _devices


def _query_devices() -> list[EGLDevice]:
    egl = ctypes.CDLL(ctypes.util.find_library("EGL") or "libEGL.so.1")
    egl.eglGetProcAddress.restype = ctypes.c_void_p
    egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]

    def fn(name, restype, *argtypes):
        address = egl.eglGetProcAddress(name.encode())
        return ctypes.CFUNCTYPE(restype, *argtypes)(address) if address else None

    query_devices = fn("eglQueryDevicesEXT", ctypes.c_uint, ctypes.c_int,
                       ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int))
    query_string = fn("eglQueryDeviceStringEXT", ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int)
    query_attrib = fn("eglQueryDeviceAttribEXT", ctypes.c_uint, ctypes.c_void_p, ctypes.c_int,
                      ctypes.POINTER(ctypes.c_ssize_t))
    if query_devices is None or query_string is None:
        return []
    handles, count = (ctypes.c_void_p * _MAX_DEVICES)(), ctypes.c_int(0)
    if not query_devices(_MAX_DEVICES, handles, ctypes.byref(count)):
        return []
    found = []
    for index in range(count.value):
        handle = handles[index]
        extensions = tuple((query_string(handle, EGL_EXTENSIONS) or b"").decode().split())

        def text(name):
            value = query_string(handle, name)
            return value.decode() if value else None
        cuda = None
        if "EGL_NV_device_cuda" in extensions and query_attrib is not None:
            value = ctypes.c_ssize_t(-1)
            if query_attrib(handle, EGL_CUDA_DEVICE_NV, ctypes.byref(value)) and value.value >= 0:
                cuda = int(value.value)
        found.append(EGLDevice(
            index=index, extensions=extensions, cuda_device=cuda,
            drm_file=text(EGL_DRM_DEVICE_FILE_EXT) if "EGL_EXT_device_drm" in extensions else None,
            render_node=(text(EGL_DRM_RENDER_NODE_FILE_EXT)
                         if "EGL_EXT_device_drm_render_node" in extensions else None)))
    return found


def assigned() -> DeviceChoice:
    """The choice for this machine's devices and this process's environment."""
    return choose(devices(), os.environ)


__all__ = ["ASSIGNMENT_VARIABLES", "DeviceChoice", "EGLDevice", "assigned", "choose", "devices"]
