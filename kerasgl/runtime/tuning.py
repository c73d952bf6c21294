"""Per-device choices of kernel variants: where convolution kernels read their operands from, and
their block sizes.

Every choice made here selects among variants that compute the same values in the same order
(the same sums, only read through a different path or spread differently over invocations), so
results do not depend on the device's tuning beyond float rounding of the driver itself.

Choices come from three places, later ones winning:
1. the device policy's defaults (devices/: the plain policy keeps Tuning's own, chosen for GPUs;
   a driver's policy hands down the values measured on it, e.g. llvmpipe's);
2. a per-device JSON file under `$XDG_CACHE_HOME/kerasgl/` (default `~/.cache/kerasgl/`), keyed
   by renderer and GL version, written by a short measurement of the variants on the device
   (kerasgl/autotune.py: `kerasgl tune` from the shell); never required: an unreadable or
   unwritable cache is ignored;
3. the setting KERASGL_TUNING (kerasgl/settings.py: the environment variable, or an override),
   e.g. `conv_weights_image=0,conv_input_image=0` (what the tests use to run every variant).

Why a driver's defaults differ, and the figures behind them, is said where they are declared
(kerasgl/devices/llvmpipe/policy.py for llvmpipe).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from .. import cache_files, settings
from . import context

ENV = settings.SETTINGS["tuning"].name
CACHE_FILE = "tuning.json"


@dataclass(frozen=True)
class Tuning:
    """The kernel variants to use on one device."""
    conv_weights_image: bool = False   # Conv2D weights read through an image view (else as an SSBO)
    conv_input_image: bool = False     # the convolution's input read through an image view
    matmul_views: bool = False         # matmul.comp reads A and B through image views
    window_views: bool = False         # pooling and padding read their input through image views
    depthwise_views: bool = False      # depthwise convolutions read input and weights likewise
    elementwise_views: bool = False    # binary element-wise ops (vec4 path) read operands likewise
    matmul_as_conv: bool = False       # large GEMMs run on the convolution kernel
    # Large GEMMs run as tiled GEMMs (shaders/matmul_tiled.comp: shared-memory tiles of A and B,
    # register blocking), and convolutions of one group as implicit GEMMs on the same tiles
    # (conv_gemm.comp): what GPUs are built for. The tile shape (ops/gemm_tiles.py): a work group
    # computes gemm_tile_m x gemm_tile_n outputs, gemm_block_m x gemm_block_n per invocation,
    # staging gemm_tile_k-deep slices of A and B in shared memory.
    matmul_tiled: bool = True
    conv_gemm: bool = True
    gemm_tile_m: int = 64
    gemm_tile_n: int = 64
    gemm_tile_k: int = 16
    gemm_block_m: int = 4
    gemm_block_n: int = 4
    # conv2d.comp's tile per invocation: at most conv_pix output pixels x conv_cout_vec vec4s of
    # output channels, all in registers. 4 x 4 (64 floats) stays within a GPU thread's registers;
    # llvmpipe, whose "registers" are a CPU's stack, measured 16 x 8 fastest.
    conv_pix: int = 4
    conv_cout_vec: int = 4
    # Lanes per work group of the convolution kernels not run as GEMMs (and of depthwise ones):
    # 64 is two NVIDIA warps, one AMD wave64.
    conv_local_size: int = 64
    # Depthwise convolutions in work groups that stage their input tile in shared memory once
    # (shaders/depthwise_conv2d_tiled.glsl; ops/conv.py depthwise_tiles checks the shape against
    # the device): depthwise_tile_h x depthwise_tile_w output pixels (plus the kernel's halo) for
    # depthwise_tile_c vec4s of channels, depthwise_tile_pix adjacent outputs of a row per
    # invocation. 8 x 8 pixels x 4 vec4s x 1: 256 invocations (whole warps and waves), 6.4 KiB of
    # shared memory for a 3x3 kernel at stride 1, 18.5 KiB at stride 2; neighbouring lanes read
    # neighbouring vec4s. Off: each invocation reads its input window itself (the row kernel).
    depthwise_tiled: bool = True
    depthwise_tile_h: int = 8
    depthwise_tile_w: int = 8
    depthwise_tile_c: int = 4
    depthwise_tile_pix: int = 1
    # Packed convolution weights never 2^k vec4s long (one unread vec4 appended): for a driver
    # that compiles a second variant of a program for power-of-two image widths
    # (ops/conv.not_power_of_two_texels).
    conv_weights_not_power_of_two: bool = False
    # float16 weights (load_model's storage_dtype) decoded by integer arithmetic instead of the
    # unpackHalf2x16 built-in (shaders/half_weights.glsl): for a driver that runs the built-in
    # lane by lane; a GPU converts halves in hardware.
    half_decode_integer: bool = False
    # Results stored into textures of halves (activation_dtype="float16") rounded to the nearest
    # half in the shader before the store (shaders/texture_operand.glsl): for a driver whose
    # texture unit truncates float32 to half; GPUs' stores round to nearest even themselves.
    half_store_rounding: bool = False


_current: Tuning | None = None
_overridden: dict = {}


def device_key() -> str:
    """'renderer | GL version' (and the driver's compute thread count, where the policy knows it):
    what a measured choice is valid for. A software driver run inline (0 threads) has no
    per-dispatch wait, so it may choose differently."""
    info = context.info()
    threads = "" if info.compute_threads is None else f" | {info.compute_threads} threads"
    return f"{info.renderer} | {info.version}{threads}"


def cache_path() -> str:
    return cache_files.path_of(CACHE_FILE)


def _read_cache() -> dict:
    return cache_files.read_dict(CACHE_FILE)


def _apply(tuning: Tuning, values: dict) -> Tuning:
    """`tuning` with the known fields of `values` replaced (unknown keys and bad values ignored)."""
    fields = {f.name: f.type for f in dataclasses.fields(Tuning)}
    changes = {}
    for key, value in values.items():
        if key not in fields:
            continue
        try:
            if fields[key] in (bool, "bool"):
                value = value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes")
            else:
                value = int(value)
                if value <= 0:
                    continue
        except (TypeError, ValueError):
            continue
        changes[key] = value
    return dataclasses.replace(tuning, **changes)


def _parse_env(text: str) -> dict:
    values = {}
    for item in re.split(r"[,;\s]+", text.strip()):
        if "=" in item:
            key, value = item.split("=", 1)
            values[key.strip()] = value.strip()
    return values


def defaults_for(policy) -> Tuning:
    """The variants a device policy (devices/) runs by default: Tuning's own, chosen for GPUs,
    with the values the policy measured on its driver."""
    return _apply(Tuning(), policy.tuning_defaults())


def current() -> Tuning:
    """The settings for the device kerasgl runs on (computed once per process)."""
    global _current
    if _current is None:
        tuning = defaults_for(context.policy())
        cached = _read_cache().get(device_key())
        if isinstance(cached, dict):
            tuning = _apply(tuning, cached)
        _current = tuning
    text = settings.get("tuning")       # the environment or an override (autotune's trials)
    if not text:
        return _current
    key = (_current, text)
    if key not in _overridden:          # ops ask on every call: parse each setting once
        _overridden[key] = _apply(_current, _parse_env(text))
    return _overridden[key]


def reset() -> None:
    """Forget the computed settings (after changing the cache file or the device)."""
    global _current
    _current = None


def save(values: dict) -> bool:
    """Record measured settings for this device in the cache file; False (and nothing raised)
    where the file cannot be written."""
    data = _read_cache()
    data[device_key()] = {k: v for k, v in values.items()
                          if k in {f.name for f in dataclasses.fields(Tuning)}}
    if not cache_files.write_dict(CACHE_FILE, data):
        return False
    reset()
    return True
