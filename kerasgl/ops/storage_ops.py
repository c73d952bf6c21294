"""Moving tensors between buffer and texture storage, and letting every op accept both.

Every op takes tensors in either storage. An op written against buffers only is decorated with
`any_storage`, which copies a texture argument into a temporary buffer first
(texture_to_buffer.comp). An op whose kernel binds operands as images instead reads a texture
where it is: it names those arguments in `any_storage(in_place=...)`, dispatches through
`run_in_place`, and its kernel includes shaders/texture_operand.glsl; so the texture storage costs
it no copy. The result follows one rule either way: when every tensor argument was a texture, it
is returned as a texture (written there directly by an op that allocates it with
`result_storage`, else copied there after).

A texture may hold halves (tensors/tensor.py HALF_TEXTURE: a float32 tensor stored as IEEE halves
in an r16f texture): a model run with activation_dtype="float16" keeps its activations so
(ops/half_activations.py). Kernels read and write it as they read and write an r32f texture, the
texture unit converting (texture_operand.glsl: the define HALF_TEXTURE_<unit> declares the
unit r16f); a copy to a buffer is float32. While such a model runs (`half_results`), every result
written in place is a texture of halves, whatever its operands.
"""
from __future__ import annotations

import functools
import inspect

from ..runtime import context, tuning
from ..tensors import ownership
from ..tensors.tensor import HALF_TEXTURE, Tensor, empty, is_half_texture
from . import dispatch

GL_R32F, GL_R32I, GL_R16F = 0x822E, 0x8235, 0x822D
_FORMAT = {"float32": GL_R32F, "int32": GL_R32I, "bool": GL_R32I}   # (bool: 0 / 1)


class _HalfResults:
    """Whether results written in place are textures of halves: on while a float16-activation
    model runs (ops/half_activations.py sets it; a counter, so scopes nest)."""
    depth = 0


def image_format(x: Tensor) -> int:
    """The GL image format a kernel binds texture tensor x with: r16f for a texture of halves."""
    return GL_R16F if is_half_texture(x.gl_object) else _FORMAT[x.dtype]


def _store_rounding(fmt: int) -> dict:
    """The define that makes a kernel round what it stores into a texture of halves itself
    (texture_operand.glsl): where the device policy says its stores truncate (llvmpipe)."""
    if fmt == GL_R16F and tuning.current().half_store_rounding:
        return {"HALF_STORE_ROUNDING": True}
    return {}


def to_texture(x: Tensor, half: bool | None = None) -> Tensor:
    """A copy of x in a texture: of halves when `half` (a float32 x only), else 32-bit texels;
    half=None keeps a texture's own format (a buffer gets 32-bit texels)."""
    x._check_alive()
    if half is None:
        half = x.storage == "texture" and is_half_texture(x.gl_object)
    if x.storage == "texture":
        return into_storage(to_buffer(x), HALF_TEXTURE if half else "texture")
    return _convert(x, HALF_TEXTURE if half else "texture", "buffer_to_texture.comp")


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
        writes_texture = storage != "buffer"
        buffer, texture = (x, out) if writes_texture else (out, x)
        fmt = image_format(texture)
        defines = {"IS_INT": x.dtype != "float32", "HALF": fmt == GL_R16F}
        if writes_texture:
            defines.update(_store_rounding(fmt))
        dispatch.run(shader, defines=defines,
                     buffers=[buffer],
                     images=[(0, texture.gl_texture(), not writes_texture, writes_texture, fmt)],
                     uniforms={"n": x.size}, groups=dispatch.groups_for(x.size))
    return out


def _stored_as(x: Tensor, storage: str) -> bool:
    """Whether x is stored as `storage` asks ("buffer", "texture" of 32-bit texels, or
    HALF_TEXTURE; an int32 or bool tensor asked for halves is as asked in a 32-bit texture)."""
    if storage == HALF_TEXTURE:
        return x.storage == "texture" and (is_half_texture(x.gl_object) or x.dtype != "float32")
    if storage == "texture":
        return x.storage == "texture" and not is_half_texture(x.gl_object)
    return x.storage == storage


def into_storage(x: Tensor, storage: str) -> Tensor:
    """x itself when it is stored in `storage` ("buffer", "texture" or HALF_TEXTURE); else a copy
    there, and x (a temporary the caller hands over) is disposed."""
    if _stored_as(x, storage):
        return x
    try:
        if storage == "buffer":
            return to_buffer(x)
        return to_texture(x, half=storage == HALF_TEXTURE)
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
    if _HalfResults.depth and textures_in_place():
        return HALF_TEXTURE
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
        # (a list or tuple argument's tensors count too: concatenate's)
        tensors = [t for v in list(args) + list(kwargs.values()) for t in _tensors_in(v)]
        halves = _HalfResults.depth
        if not any(_in_texture(t) for t in tensors):
            return _with_float32_results(op, in_place)(*args, **kwargs)
        reads_in_place = in_place if textures_in_place() else frozenset()

        def staged(value, name):
            if isinstance(value, (list, tuple)):     # its tensors read in place, or not, alike
                return type(value)(staged(v, name) for v in value)
            if _in_texture(value) and name not in reads_in_place:
                return to_buffer(value)        # a temporary: the tidy scope below frees it
            return value

        def call():
            return _with_float32_results(op, in_place)(
                *[staged(a, positional[i] if i < len(positional) else None)
                  for i, a in enumerate(args)],
                **{k: staged(v, k) for k, v in kwargs.items()})
        result = ownership.tidy.run(call)
        if all(t.storage == "texture" for t in tensors) and isinstance(result, Tensor):
            return into_storage(result, HALF_TEXTURE if halves else "texture")
        return result

    return wrapper


def _tensors_in(value) -> list:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Tensor)]
    return []


def _with_float32_results(op, in_place):
    """op as any_storage runs it. An op that reads buffers only (no `in_place` arguments) runs as
    outside a float16-activation run: the kernels it calls write float32 results where its own
    dispatches read them as buffers (rnn.recurrence's input projection); any_storage keeps its
    result as halves after."""
    if in_place or not _HalfResults.depth:
        return op

    def run(*args, **kwargs):
        saved, _HalfResults.depth = _HalfResults.depth, 0
        try:
            return op(*args, **kwargs)
        finally:
            _HalfResults.depth = saved
    return run


def run_in_place(shader: str, *, buffers, reads: dict, writes: dict | None = None,
                 defines: dict | None = None, images=(), **kwargs) -> None:
    """dispatch.run for a kernel that includes shaders/texture_operand.glsl: buffers[k] may be a
    tensor stored in a texture for each binding k named in `reads` (operands) or `writes` (the
    result), k -> NAME. Such a tensor is bound as an image at unit k (read-only, or write-only
    for a result) and the define NAME_TEXTURE is set, so that the kernel declares that operand
    as an image (the define is left out otherwise: programs of buffer operands keep their
    names), and HALF_TEXTURE_k where it is a texture of halves. A None in `buffers` is an operand the kernel does not read from a buffer (a number
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
                fmt = image_format(tensor)
                if fmt == GL_R16F:
                    defines[f"HALF_TEXTURE_{binding}"] = True
                if not read:
                    defines.update(_store_rounding(fmt))
                images.append((binding, tensor.gl_texture(), read, not read, fmt))
                bound[binding] = None
    while bound and bound[-1] is None:
        bound.pop()
    stand_in = next((b for b in bound if b is not None), None)
    dispatch.run(shader, defines=defines, buffers=[stand_in if b is None else b for b in bound],
                 images=images, **kwargs)
