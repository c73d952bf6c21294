"""Bind buffers, set uniforms, dispatch a compute program: the one place ops touch moderngl."""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..runtime import buffer_views, context, recording, shaders
from ..tensors.tensor import HALF

MAX_GROUPS_PER_DIM = 65535
DEFAULT_LOCAL_SIZE = 64
# The active profilers (kerasgl/profiler/), innermost last; only kg.profile() changes it. Off, a
# dispatch pays one list test, as for recording.
profilers: list = []


def groups_for(n_invocations: int, local_size: int = DEFAULT_LOCAL_SIZE) -> tuple[int, int, int]:
    """Work-group grid covering n invocations in 1D, folded into 2D past 65535 groups
    (the shader's linear_index() undoes the fold)."""
    n_groups = max(1, math.ceil(n_invocations / local_size))
    if n_groups <= MAX_GROUPS_PER_DIM:
        return (n_groups, 1, 1)
    gy = math.ceil(n_groups / MAX_GROUPS_PER_DIM)
    gx = math.ceil(n_groups / gy)
    return (gx, gy, 1)


def run(name: str, *, defines: dict | None = None, buffers=(), images=(), views=(),
        uniforms: dict | None = None, groups: tuple = (1, 1, 1), work=None) -> None:
    """Dispatch shaders/<name>.

    buffers: sequence of tensors (or moderngl buffers) bound as SSBOs 0, 1, 2, ... in order.
    images: sequence of (unit, moderngl texture, read, write, format) bound as image units.
    views: sequence of (unit, buffer tensor) or (unit, buffer tensor, format): the tensor's buffer
        bound to that image unit as a read-only imageBuffer, "rgba32f" unless said ("r32f")
        (kerasgl/runtime/buffer_views.py; check buffer_views.fits first).
    uniforms: name -> value; names the compiler optimised away are ignored, and tuple values
        for array uniforms are cut to the length the compiler kept (GLSL compilers shrink an
        array to the elements the code can reach, and moderngl wants exactly that length).
    """
    if not (defines and defines.get("WEIGHTS_F16")):
        refuse_halves(name, buffers)
    program = shaders.program(name, defines)
    handles = [buf.gl_buffer() if hasattr(buf, "gl_buffer") else buf for buf in buffers]
    for binding, handle in enumerate(handles):
        handle.bind_to_storage_buffer(binding)
    for unit, texture, read, write, fmt in images:
        texture.bind_to_image(unit, read=read, write=write, format=fmt)
    views = [(v[0], v[1], v[2] if len(v) > 2 else "rgba32f") for v in views]
    for unit, tensor, fmt in views:
        buffer_views.view_of(tensor.gl_object, fmt).bind(unit)
    settings = resolve_uniforms(program, uniforms) if uniforms else ()
    set_uniforms(settings)
    groups = tuple(groups)
    # program.run(*groups), as this driver wants it run (kerasgl/devices/: the plain policy just
    # runs it; llvmpipe's places its worker threads first); a profiler times it in between.
    if profilers:
        profilers[-1].dispatch(name, defines, buffers, groups, program.run, work)
    else:
        context.policy().dispatch(program.run, groups)
    # Later dispatches and reads must see these writes.
    context.get_context().memory_barrier()
    if recording.recorders:
        recording.recorders[-1].dispatch(name, defines, program, buffers, handles, images,
                                         settings, groups, views, work)


def refuse_halves(what: str, tensors) -> None:
    """A float16 tensor (weights stored as halves, tensors/tensor.py HALF) is read only by the
    kernels that unpack it, which say so with the define WEIGHTS_F16 (shaders/half_weights.glsl):
    any other kernel (or copy) would read its words as float32, so it is refused here."""
    for t in tensors:
        if getattr(t, "dtype", None) == HALF:
            raise ShapeError(
                f"{what} cannot read a float16 tensor (of shape {list(t.shape)}): float16 holds "
                "weights stored as halves (load_model's storage_dtype='float16'), which only "
                "the Dense, EinsumDense, Embedding and convolution kernels read.")


# Uniform writes skip values a program already holds: the table lives with the program cache.
set_uniforms = shaders.set_uniforms


def resolve_uniforms(program, uniforms: dict) -> list:
    """(moderngl uniform member, value) pairs to set: names the compiler dropped are left out and
    array values cut to the length it kept. Plans (plan.py) resolve once and replay the pairs."""
    settings = []
    for key, value in uniforms.items():
        member = program.get(key, None)
        if member is None:
            continue
        if isinstance(value, tuple):
            kept = member.array_length * member.dimension
            if len(value) > kept:
                value = value[0] if kept == 1 else value[:kept]
        settings.append((member, value))
    return settings


def copy_buffer(dst, src, size: int, read_offset: int = 0, write_offset: int = 0) -> None:
    """Copy `size` bytes between buffer tensors (GPU to GPU), recorded like a dispatch."""
    if size <= 0:
        return
    refuse_halves("A buffer copy", (dst, src))
    if profilers:
        profilers[-1].copy(dst, src, size, read_offset, write_offset)
    else:
        context.get_context().copy_buffer(dst.gl_buffer(), src.gl_buffer(), size=size,
                                          read_offset=read_offset, write_offset=write_offset)
    if recording.recorders:
        recording.recorders[-1].copy(dst, src, size, read_offset, write_offset)
