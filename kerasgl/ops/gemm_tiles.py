"""The tile shape of the tiled GEMM kernels (shaders/gemm_tile.glsl, run by matmul_tiled.comp
and conv_gemm.comp): a work group computes a tile_m x tile_n tile of C, staging tile_k-deep
slices of A and B in shared memory, each invocation block_m x block_n outputs in registers.

The sizes are the device's tuning (runtime/tuning.py gemm_tile_m, gemm_tile_n, gemm_tile_k,
gemm_block_m, gemm_block_n; `kerasgl tune` times a few and caches the fastest), checked here
against what the kernel needs (whole vec4s, whole blocks per tile) and what the device allows
(GL_MAX_COMPUTE_WORK_GROUP_INVOCATIONS and _SIZE, GL_MAX_COMPUTE_SHARED_MEMORY_SIZE, as
runtime/context.limits() reads them). The generic defaults, 64 x 64 tiles of 4 x 4 blocks, 16
deep (256 invocations, 8 KiB of shared memory), fit every GL 4.3 device (at least 1024
invocations and 32 KiB); a shape that does not fit (an override) is refused, naming the
setting, never run as something else.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import SettingError
from ..runtime import context, tuning


@dataclass(frozen=True)
class Tiles:
    m: int
    n: int
    k: int
    block_m: int
    block_n: int

    @property
    def local_size(self) -> tuple[int, int]:
        """(x, y) of the work group: lanes along N, lanes along M."""
        return self.n // self.block_n, self.m // self.block_m

    @property
    def invocations(self) -> int:
        return math.prod(self.local_size)

    @property
    def shared_bytes(self) -> int:
        return 4 * self.k * (self.m + self.n)

    def defines(self) -> dict:
        x, y = self.local_size
        return {"TILE_M": self.m, "TILE_N": self.n, "TILE_K": self.k,
                "BLOCK_M": self.block_m, "BLOCK_N": self.block_n, "LX": x, "LY": y}

    def problems(self, limits) -> list[str]:
        """What makes this shape unusable on a device with these limits (empty: none)."""
        found = []
        for name, value in (("gemm_block_m", self.block_m), ("gemm_block_n", self.block_n),
                            ("gemm_tile_k", self.k)):
            if value % 4:
                found.append(f"{name}={value} is not a multiple of 4 (whole vec4s)")
        for tile, block, names in ((self.m, self.block_m, "gemm_tile_m / gemm_block_m"),
                                   (self.n, self.block_n, "gemm_tile_n / gemm_block_n")):
            if tile % block or tile % 4:
                found.append(f"{names} = {tile} / {block}: a tile must be whole blocks")
        x, y = self.local_size
        if self.invocations > limits.max_work_group_invocations or \
                x > limits.max_work_group_size[0] or y > limits.max_work_group_size[1]:
            found.append(f"a work group of {x} x {y} invocations exceeds the device's "
                         f"{limits.max_work_group_invocations} (sizes "
                         f"{limits.max_work_group_size})")
        if self.shared_bytes > limits.max_shared_memory_bytes:
            found.append(f"{self.shared_bytes} bytes of shared memory exceed the device's "
                         f"{limits.max_shared_memory_bytes}")
        return found


# (kernel, Tuning) -> its tile shape, once checked against the device's limits
_checked: dict = {}


def checked_for_device(kernel: str, build):
    """The tile shape `build(tuning)` makes from the device's tuning for `kernel` ("tiled GEMM",
    "tiled depthwise kernel"), checked once per tuning against the device's limits (its
    problems(limits)); SettingError naming the tuning's source where it cannot run here."""
    choice = tuning.current()
    tiles = _checked.get((kernel, choice))
    if tiles is None:
        tiles = build(choice)
        found = tiles.problems(context.limits())
        if found:
            raise SettingError(f"The {kernel}'s tile shape from the tuning ({tuning.ENV}, or "
                               f"its cache {tuning.cache_path()}) cannot run: "
                               + "; ".join(found) + ".")
        _checked[(kernel, choice)] = tiles
    return tiles


def current() -> Tiles:
    """The tile shape the device's tuning asks for; SettingError where it cannot run here."""
    return checked_for_device("tiled GEMM", lambda choice: Tiles(
        choice.gemm_tile_m, choice.gemm_tile_n, choice.gemm_tile_k, choice.gemm_block_m,
        choice.gemm_block_n))


__all__ = ["Tiles", "checked_for_device", "current"]
