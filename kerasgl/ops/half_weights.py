"""Weights stored as float16 (kg.load_model(path, storage_dtype="float16")): what the ops that
read them hand their kernels, and how layers upload them.

A float16 weight tensor (tensors/tensor.py HALF) holds IEEE halves two per 32-bit word; the
kernels that read Dense / EinsumDense kernels (matmul.comp, matmul_tiled.comp), convolution
kernels (conv2d.comp, conv_gemm.comp) and Embedding tables (embedding_rows.comp) read them through
shaders/half_weights.glsl, which unpacks them to float32: the arithmetic stays float32. The define
WEIGHTS_F16 selects that variant (only where it is set: float32 programs are unchanged), and
ops/dispatch.py refuses a float16 tensor to any dispatch without it.
"""
from __future__ import annotations

from ..runtime import tuning
from ..tensors.tensor import HALF

# The values load_model's storage_dtype takes.
STORAGE_DTYPES = ("float32", HALF)


def is_half(weights) -> bool:
    return getattr(weights, "dtype", None) == HALF


def defines(weights) -> dict:
    """The defines that make a kernel read `weights` as halves ({} for float32 weights): with the
    GPU's built-in unpackHalf2x16, or the integer decode where the device policy asks for it
    (tuning half_decode_integer: llvmpipe, which runs the built-in lane by lane)."""
    if not is_half(weights):
        return {}
    if tuning.current().half_decode_integer:
        return {"WEIGHTS_F16": True, "HALF_DECODE_INTEGER": True}
    return {"WEIGHTS_F16": True}


def view_format(weights) -> str:
    """The texel format of an image view of `weights`: texel i is vec4 i of the weights either
    way (float32: rgba32f; float16: rg32ui, two words of two halves)."""
    return "rg32ui" if is_half(weights) else "rgba32f"


def item_bytes(dtype: str) -> int:
    """Bytes per weight stored as `dtype`."""
    return 2 if dtype == HALF else 4


def upload_as(upload, array, dtype: str):
    """`upload(array)` (a layer's upload, or any function of an array), asking for float16
    storage where `dtype` says so: a plain upload function is called as before for float32."""
    return upload(array) if dtype != HALF else upload(array, dtype=HALF)


__all__ = ["STORAGE_DTYPES", "defines", "is_half", "item_bytes", "upload_as", "view_format"]
