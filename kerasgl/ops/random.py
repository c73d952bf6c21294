"""Random tensors generated on the GPU with Philox4x32-10 (shaders/random_philox.glsl).

The generator is counter-based: element i depends only on (seed, i), so the same seed gives the
same numbers on every run, and nothing but the seed needs to be remembered. Without a seed, a fresh
one is drawn from the operating system for each call.
"""
from __future__ import annotations

import math
import os

from ..errors import ShapeError
from ..tensors.tensor import Tensor, _check_storage, empty, normalize_dtype, normalize_shape
from . import dispatch
from .storage_ops import into_storage

_SEED_MASK = (1 << 64) - 1


def _seed_words(seed) -> tuple[int, int]:
    """A 64-bit Philox key (two uint32 words) from a Python integer seed, or a random one."""
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    if isinstance(seed, bool) or not isinstance(seed, int):
        try:
            seed = int(seed)
        except (TypeError, ValueError):
            raise TypeError(f"seed must be an integer or None. Received {seed!r}.")
    seed &= _SEED_MASK   # negative and huge seeds wrap to 64 bits
    return seed & 0xFFFFFFFF, seed >> 32


def _generate(shader: str, shape, dtype, storage: str, seed, uniforms: dict) -> Tensor:
    shape, dtype = normalize_shape(shape), normalize_dtype(dtype)
    _check_storage(storage)
    if dtype != "float32":
        raise ShapeError(f"Random tensors are float32. Received dtype {dtype}.")
    out = empty(shape, dtype, storage="buffer")
    if out.size:   # (a buffer holds far fewer than 2**32 elements: block indices fit a uint)
        blocks = math.ceil(out.size / 4)
        dispatch.run(shader, buffers=[out],
                     uniforms={"n": out.size, "seed": _seed_words(seed), **uniforms},
                     groups=dispatch.groups_for(blocks))
    return into_storage(out, storage)


def random_uniform(shape, minval: float = 0.0, maxval: float = 1.0, dtype="float32", seed=None,
                   storage: str = "buffer") -> Tensor:
    """Uniform numbers in [minval, maxval). The same seed gives the same tensor."""
    if not float(maxval) > float(minval):
        raise ValueError(f"random_uniform needs maxval > minval. Received minval={minval}, maxval={maxval}.")
    return _generate("random_uniform.comp", shape, dtype, storage, seed,
                     {"minval": float(minval), "maxval": float(maxval)})


def random_normal(shape, mean: float = 0.0, stddev: float = 1.0, dtype="float32", seed=None,
                  storage: str = "buffer") -> Tensor:
    """Normally distributed numbers (Box-Muller). The same seed gives the same tensor."""
    if float(stddev) < 0:
        raise ValueError(f"random_normal needs stddev >= 0. Received stddev={stddev}.")
    return _generate("random_normal.comp", shape, dtype, storage, seed,
                     {"mean": float(mean), "stddev": float(stddev)})
