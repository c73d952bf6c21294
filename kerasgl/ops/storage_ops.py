"""Moving tensors between buffer and texture storage, and letting every op accept both.

Every op takes tensors in either storage. An op written against buffers only is decorated with
`any_storage`, which copies a texture argument into a temporary buffer first
(texture_to_buffer.comp). An op whose kernel binds operands as images instead reads a texture
where it is: it names those arguments in `any_storage(in_place=...)`, dispatches through
`run_in_place`, and its kernel includes shaders/texture_operand.glsl; so the texture storage costs
it no copy. The result follows one rule either way: when every tensor argument was a texture, it
is returned as a texture (written there directly by an op that allocates it with
`result_storage`, else copied there after).
"""
from __future__ import annotations

import functools
import inspect

from ..runtime import context
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty, texture_extent
from . import dispatch

GL_R32F, GL_R32I = 0x822E, 0x8235
_FORMAT = {"float32": GL_R32F, "int32": GL_R32I, "bool": GL_R32I}   # (bool: 0 / 1)


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


# -------------------------------------------------------------------------------------------------
# Ops taking either storage
# -------------------------------------------------------------------------------------------------
def _in_texture(value) -> bool:
    return isinstance(value, Tensor) and not value.is_disposed and value.storage == "texture"


def textures_in_place() -> bool:
    """Whether kernels may read and write textures in place on this device. texture_operand.glsl's
    vec4 access takes a texture's rows to hold whole vec4s, true of every tensor of 4k elements
    when GL_MAX_TEXTURE_SIZE is a multiple of 4: GL asks for 16384 or more and drivers report
    powers of two. Were one not to, its ops would copy textures as they did before."""
    return context.limits().max_texture_size % 4 == 0


def result_storage(*operands) -> str:
    """Where an op that writes its result in place allocates it: "texture" when every tensor
    among `operands` (its tensor arguments; numbers and None are skipped) is a texture, as
    any_storage would return it, else "buffer"."""
    tensors = [v for v in operands if isinstance(v, Tensor)]
    if tensors and all(_in_texture(t) for t in tensors) and textures_in_place():
        return "texture"
    return "buffer"


def any_storage(op=None, *, in_place: tuple = ()):
    """Decorator (`@any_storage`, or `@any_storage(in_place=("x",))`) letting an op take tensors in
    either storage.

    A tensor argument stored in a texture is copied to a temporary buffer (freed when the op
    returns), except the arguments named in `in_place`, which the op's kernel reads as images
    where they are (run_in_place). When every tensor argument was a texture the result is
    returned as a texture: as the op returned it (result_storage), else copied there."""
    if op is None:
        return functools.partial(any_storage, in_place=tuple(in_place))
    positional = [p.name for p in inspect.signature(op).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    in_place = frozenset(in_place)

    @functools.wraps(op)
    def wrapper(*args, **kwargs):
        tensors = [v for v in list(args) + list(kwargs.values()) if isinstance(v, Tensor)]
        if not any(_in_texture(t) for t in tensors):
            return op(*args, **kwargs)
        reads_in_place = in_place if textures_in_place() else frozenset()

        def staged(value, name):
            if _in_texture(value) and name not in reads_in_place:
                return to_buffer(value)        # a temporary: the tidy scope below frees it
            return value

        def call():
            return op(*[staged(a, positional[i] if i < len(positional) else None)
                        for i, a in enumerate(args)],
                      **{k: staged(v, k) for k, v in kwargs.items()})
        result = ownership.tidy.run(call)
        if all(t.storage == "texture" for t in tensors) and isinstance(result, Tensor):
            return into_storage(result, "texture")
        return result

    return wrapper


def run_in_place(shader: str, *, buffers, reads: dict, writes: dict | None = None,
                 defines: dict | None = None, images=(), **kwargs) -> None:
    """dispatch.run for a kernel that includes shaders/texture_operand.glsl: buffers[k] may be a
    tensor stored in a texture for each binding k named in `reads` (operands) or `writes` (the
    result), k -> NAME. Such a tensor is bound as an image at unit k (read-only, or write-only
    for a result) and the define NAME_TEXTURE is set, so that the kernel declares that operand
    as an image (the define is left out otherwise: programs of buffer operands keep their
    names). A None in `buffers` is an operand the kernel does not read from a buffer (a number
    passed as a uniform).

    Storage-buffer bindings are positional (dispatch.run binds buffers[k] at k), so a binding
    left without a buffer gets a stand-in, any buffer of the dispatch (the kernel declares no
    storage block there; GL only asks that what a program declares be bound), and trailing
    ones are left unbound. Views (`views=`) are for buffer operands only: the caller asks for
    them where the tensor is a buffer."""
    defines, images, bound = dict(defines or {}), list(images), list(buffers)
    for names, read in ((reads, True), (writes or {}, False)):
        for binding, name in names.items():
            tensor = bound[binding]
            if _in_texture(tensor):
                defines[f"{name}_TEXTURE"] = True
                images.append((binding, tensor.gl_texture(), read, not read, _FORMAT[tensor.dtype]))
                bound[binding] = None
    while bound and bound[-1] is None:
        bound.pop()
    stand_in = next((b for b in bound if b is not None), None)
    dispatch.run(shader, defines=defines, buffers=[stand_in if b is None else b for b in bound],
                 images=images, **kwargs)
