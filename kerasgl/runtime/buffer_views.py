"""Image views of storage buffers (GL texture buffer objects), which shaders read with imageLoad.

Why: Mesa's llvmpipe (the GPU of CI and of any machine without one) compiles a shader-storage-buffer
load into a loop over the SIMD lanes and the components, with a bounds check and a branch each,
while an image load of an RGBA32F texel is one vector gather. Reading the same memory through a
texture-buffer view made a 1024^3 matmul 2.2x faster (16.6 -> 36.5 GFLOP/s) with no copy: the view
shares its buffer's data store. Which kernels read through views is a per-device choice
(kerasgl/runtime/tuning.py); the values and the order of the sums are the same either way.

A view is a GL texture, owned like every GL object (objects.py): one per buffer, made on first
use, kept with the buffer and released with it, before it (GL keeps a buffer's memory alive while a
texture still refers to it).
"""
from __future__ import annotations

import ctypes

from . import context
from .objects import GLObject

GL_TEXTURE_BUFFER = 0x8C2A
GL_READ_ONLY = 0x88B8
GL_MAX_TEXTURE_BUFFER_SIZE = 0x8C2B
# Texel formats a view may have: GL internal format and bytes per texel. "rgba32f": texel i is
# vec4 i of the buffer (most kernels); "r32f": texel i is float i (kernels reading scalars);
# "rg32ui": texel i is words 2i, 2i+1, the 4 halves of vec4 i of float16 weights (half_weights.glsl).
FORMATS = {"rgba32f": (0x8814, 16), "r32f": (0x822E, 4), "rg32ui": (0x823C, 8)}


class TextureBufferView:
    """The GL texture viewing one buffer as texels of one format. Has the two things
    objects.GLObject needs of a handle: `glo` and `release()`."""
    __slots__ = ("glo", "texels", "format", "_bind_image")

    def __init__(self, buffer_glo: int, nbytes: int, fmt: str = "rgba32f"):
        internal, texel_bytes = FORMATS[fmt]
        gl = context.driver()
        name = ctypes.c_uint(0)
        gl.glGenTextures(1, ctypes.byref(name))
        gl.glBindTexture(GL_TEXTURE_BUFFER, name.value)
        gl.glTexBuffer(GL_TEXTURE_BUFFER, internal, buffer_glo)
        gl.glBindTexture(GL_TEXTURE_BUFFER, 0)
        self.glo, self.texels, self.format = name.value, nbytes // texel_bytes, internal
        self._bind_image = gl.glBindImageTexture     # plans bind views at every step: no lookup

    def bind(self, unit: int) -> None:
        """Bind read-only to image unit `unit` (a shader's imageBuffer of the view's format)."""
        self._bind_image(unit, self.glo, 0, 0, 0, GL_READ_ONLY, self.format)

    def release(self) -> None:
        context.driver().glDeleteTextures(1, ctypes.byref(ctypes.c_uint(self.glo)))


_max_texels: int | None = None


def max_texels() -> int:
    """GL_MAX_TEXTURE_BUFFER_SIZE: the most texels one view may hold."""
    global _max_texels
    if _max_texels is None:
        _max_texels = context.driver().get_integer(GL_MAX_TEXTURE_BUFFER_SIZE)
    return _max_texels


def fits(nbytes: int, fmt: str = "rgba32f") -> bool:
    """Whether a buffer of this size can be viewed whole in this format."""
    return nbytes // FORMATS[fmt][1] <= max_texels()


def view_of(buffer: GLObject, fmt: str = "rgba32f") -> TextureBufferView:
    """The view of a registered buffer in this format, made on first use and released with the
    buffer (a buffer's views are a list on its GLObject; there is rarely more than one)."""
    views = buffer.views
    if views is None:
        views = buffer.views = []
    internal = FORMATS[fmt][0]
    for obj in views:
        if obj.handle.format == internal:
            return obj.handle
    view = TextureBufferView(buffer.glo, buffer.handle.size, fmt)
    # 0 bytes: the memory is the buffer's, already counted there.
    views.append(GLObject("texture", view, 0, f"{fmt} view of {buffer.label}"))
    return view


def view_of_handle(handle, fmt: str, owner_objects: list, label: str) -> TextureBufferView:
    """A view of a moderngl buffer that is not a tensor's (an execution plan's shared buffer),
    registered and appended to `owner_objects`, which the caller releases before the buffer."""
    view = TextureBufferView(handle.glo, handle.size, fmt)
    owner_objects.append(GLObject("texture", view, 0, label))
    return view


def _forget_max_texels() -> None:
    global _max_texels
    _max_texels = None       # the next context may be another device's


context.on_shutdown(_forget_max_texels)
