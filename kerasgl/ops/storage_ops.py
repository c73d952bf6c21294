"""Moving tensors between buffer and texture storage, and letting every op accept both."""
from __future__ import annotations

import functools

from ..tensors.tensor import Tensor, empty, texture_extent
from . import dispatch

_FORMAT = {"float32": 0x822E, "int32": 0x8235, "bool": 0x8235}   # GL_R32F, GL_R32I (bool: 0 / 1)


def to_texture(x: Tensor) -> Tensor:
    x._check_alive()
    if x.storage == "texture":
        return into_storage(to_buffer(x), "texture")
    return _convert(x, "texture", "buffer_to_texture.comp")


def to_buffer(x: Tensor) -> Tensor:
    x._check_alive()
    if x.storage == "buffer":
        return copy_buffer(x)
    return _convert(x, "buffer", "texture_to_buffer.comp")


def copy_buffer(x: Tensor) -> Tensor:
    """A new buffer tensor with the contents of buffer tensor x (a GPU-side copy)."""
    out = empty(x.shape, x.dtype)
    if x.size:
        dispatch.copy_buffer(out, x, size=x.nbytes)
    return out


def _convert(x: Tensor, storage: str, shader: str) -> Tensor:
    """A new tensor with x's data in the other storage: `shader` reads one side as a buffer and
    the other as the image at unit 0."""
    out = empty(x.shape, x.dtype, storage=storage)
    if x.size:
        width, _ = texture_extent(x.size)
        writes_texture = storage == "texture"
        buffer, texture = (x, out) if writes_texture else (out, x)
        dispatch.run(shader, defines={"IS_INT": x.dtype != "float32"}, buffers=[buffer],
                     images=[(0, texture.gl_texture(), not writes_texture, writes_texture,
                              _FORMAT[x.dtype])],
                     uniforms={"n": x.size, "width": width}, groups=dispatch.groups_for(x.size))
    return out


def into_storage(x: Tensor, storage: str) -> Tensor:
    """x itself when it is stored in `storage`; else a copy there, and x (a temporary the caller
    hands over) is disposed."""
    if x.storage == storage:
        return x
    try:
        return to_texture(x) if storage == "texture" else to_buffer(x)
    finally:
        x.dispose()


def any_storage(op):
    """Decorator for ops written against buffers: tensor arguments stored in textures are copied
    to temporary buffers (freed before returning), and when every tensor argument was a texture,
    the result is returned as a texture too."""

    @functools.wraps(op)
    def wrapper(*args, **kwargs):
        temporaries = []

        def staged(value):
            if isinstance(value, Tensor) and not value.is_disposed and value.storage == "texture":
                buffer = to_buffer(value)
                temporaries.append(buffer)
                return buffer
            return value

        tensors = [v for v in list(args) + list(kwargs.values()) if isinstance(v, Tensor)]
        if not any(not t.is_disposed and t.storage == "texture" for t in tensors):
            return op(*args, **kwargs)
        try:
            result = op(*[staged(a) for a in args], **{k: staged(v) for k, v in kwargs.items()})
        finally:
            for buffer in temporaries:
                buffer.dispose()
        if all(t.storage == "texture" for t in tensors) and isinstance(result, Tensor):
            return into_storage(result, "texture")
        return result

    return wrapper
