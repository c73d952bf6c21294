"""Activations stored as float16 (kg.load_model(path, activation_dtype="float16")): between its
layers, a model keeps every float32 tensor as IEEE halves, half the memory and half the bytes
each kernel reads and writes; the arithmetic stays float32.

The halves live in r16f textures (tensors/tensor.py HALF_TEXTURE). A texture suits them where a
buffer does not: the texture unit converts each element as a kernel loads or stores it, one
element per texel, so any kernel that reads and writes textures in place (texture_operand.glsl)
takes halves with no change to its body, where halves in a buffer would pair two elements in one
32-bit word and make neighbouring invocations' stores race. Every other op gets its texture
operands as float32 buffer copies (storage_ops.any_storage), as for any texture.

While such a model runs (`running`): every result a kernel writes in place is a texture of
halves (storage_ops.result_storage), each layer's float32 outputs are kept as halves
(`as_activation`, compiler/graph.py), and the model's outputs are handed back as float32 buffers
(`as_output`, plans/cache.py), their values the halves they were. Execution plans record and
replay all of it like any other dispatch.
"""
from __future__ import annotations

import contextlib

from ..errors import GPULimitError
from ..runtime import context
from ..tensors.tensor import HALF, Tensor, is_half_texture
from . import storage_ops

# The values load_model's activation_dtype takes.
ACTIVATION_DTYPES = ("float32", HALF)


def check_supported(activation_dtype: str) -> None:
    """GPULimitError where this GPU cannot keep activations as halves: textures are read in
    place only where GL_MAX_TEXTURE_SIZE is a multiple of 4 (storage_ops.textures_in_place;
    true of every driver reporting a power of two), and halves live in textures."""
    if activation_dtype == HALF and not storage_ops.textures_in_place():
        raise GPULimitError(
            "activation_dtype='float16' keeps activations in textures read in place, which this "
            f"GPU's GL_MAX_TEXTURE_SIZE ({context.limits().max_texture_size}, not a multiple of "
            "4) rules out: use activation_dtype='float32'.")


@contextlib.contextmanager
def running(activation_dtype: str):
    """The scope of one run of a model whose activations are `activation_dtype` (nothing changes
    for "float32"; scopes nest: a model inside a model)."""
    if activation_dtype != HALF:
        yield
        return
    storage_ops._HalfResults.depth += 1
    try:
        yield
    finally:
        storage_ops._HalfResults.depth -= 1


def active() -> bool:
    return storage_ops._HalfResults.depth > 0


def as_activation(x: Tensor) -> Tensor:
    """A layer's output as the model keeps it: while `running` float16, a float32 tensor not
    yet in halves is copied into a texture of halves and the original freed (a kept tensor is
    not the graph's to free: it stays); anything else is x."""
    if not active() or x.dtype != "float32" or is_half_texture(x.gl_object):
        return x
    halves = storage_ops.to_texture(x, half=True)
    if not x._kept:
        x.dispose()
    return halves


def as_output(x: Tensor) -> Tensor:
    """A model output handed back, while `running` float16: a texture (of halves, or an int32 /
    bool result that a kernel wrote in place) becomes a buffer (x freed; the halves read as
    float32), the storage predict's readers and plans expect; anything else is x."""
    if active() and x.storage == "texture":
        return storage_ops.into_storage(x, "buffer")
    return x


__all__ = ["ACTIVATION_DTYPES", "active", "check_supported", "as_activation", "as_output", "running"]
