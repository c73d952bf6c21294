"""Weights larger than one shader storage block, held as pieces of whole output blocks.

One shader binding addresses at most GL_MAX_SHADER_STORAGE_BLOCK_SIZE bytes (128 MiB on llvmpipe
and on many other drivers), and kerasgl keeps every tensor within it (tensors/tensor.py). A few
weights are larger: VGG16's fc1 kernel is 25088 x 4096 floats, 411 MB. Where a kernel's outputs
are independent along its output channels (a Dense's columns, a convolution's output-channel
blocks), its weights are cut there into pieces that each fit, every piece in a buffer of its own,
and the op runs one dispatch per piece, each writing its range of the one output (ops/matmul.py
ColumnSplit, ops/conv.py ConvPiece). Each output is summed by one invocation in the same order
as without the split, so the values are the same bit for bit; an execution plan records the
dispatches like any others.

The limit is the driver's, as runtime/context.py reads it, or lower where KERASGL_MAX_STORAGE_BLOCK
says so (kerasgl/settings.py: a testing knob that makes small layers split).
"""
from __future__ import annotations

import math

from ..errors import GPULimitError
from ..runtime import context


def storage_block_bytes() -> int:
    """The most bytes one tensor (one storage binding) may hold."""
    return context.limits().max_ssbo_block_bytes


def pieces(count: int, unit_bytes: int, what: str, unit: str, spare: int = 0,
           multiple: int = 1) -> list:
    """[(first, size)] covering `count` units of `unit_bytes` bytes each in as few pieces as fit
    one storage block (less `spare` bytes a piece may gain when laid out), sizes as even as
    possible and multiples of `multiple` (but the last). One piece, (0, count), when all fit.
    `what` names the weights and `unit` (plural) what a unit is, for the GPULimitError raised
    when not even `multiple` units fit."""
    limit = storage_block_bytes() - spare
    if count * unit_bytes <= limit:
        return [(0, count)]
    most = limit // unit_bytes // multiple * multiple
    if most <= 0:
        raise GPULimitError(
            f"{what} exceeds this GPU's largest shader storage block "
            f"(GL_MAX_SHADER_STORAGE_BLOCK_SIZE = {storage_block_bytes()} bytes), and so does the "
            f"smallest piece kerasgl splits it into ({multiple} {unit}: "
            f"{multiple * unit_bytes + spare} bytes): weights are split along their outputs only.")
    n_pieces = math.ceil(count / most)
    size = math.ceil(math.ceil(count / n_pieces) / multiple) * multiple
    return [(first, min(size, count - first)) for first in range(0, count, size)]
