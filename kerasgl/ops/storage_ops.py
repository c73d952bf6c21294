"""Moving tensors between buffer and texture storage, and letting every op accept both."""
from __future__ import annotations

import functools

from ..tensor import Tensor, empty, texture_extent
from . import dispatch

_FORMAT = {"float32": 0x822E, "int32": 0x8235}   # GL_R32F, GL_R32I


def to_texture(x: Tensor) -> Tensor:
    x._check_alive()
    if x.storage == "texture":
        return _copy_texture(x)
    out = empty(x.shape, x.dtype, storage="texture")
    if x.size:
        width, _ = texture_extent(x.size)
        dispatch.run("buffer_to_texture.comp", defines={"IS_INT": x.dtype == "int32"},
                     buffers=[x], images=[(0, out.gl_texture(), False, True, _FORMAT[x.dtype])],
                     uniforms={"n": x.size, "width": width}, groups=dispatch.groups_for(x.size))
    return out


def to_buffer(x: Tensor) -> Tensor:
    x._check_alive()
    if x.storage == "buffer":
        from .layout import copy
        return copy(x)
    out = empty(x.shape, x.dtype, storage="buffer")
    if x.size:
        width, _ = texture_extent(x.size)
        dispatch.run("texture_to_buffer.comp", defines={"IS_INT": x.dtype == "int32"},
                     buffers=[out], images=[(0, x.gl_texture(), True, False, _FORMAT[x.dtype])],
                     uniforms={"n": x.size, "width": width}, groups=dispatch.groups_for(x.size))
    return out


def _copy_texture(x: Tensor) -> Tensor:
    staged = to_buffer(x)
    try:
        return to_texture(staged)
    finally:
        staged.dispose()


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
            try:
                return to_texture(result)
            finally:
                result.dispose()
        return result

    return wrapper
