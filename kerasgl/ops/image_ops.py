"""Image operations of Keras 3's keras.ops.image and image preprocessing layers, channels-last:
colour conversions (grayscale, RGB <-> HSV), AutoContrast's per-image per-channel stretch and
CLAHE (contrast-limited adaptive histogram equalisation), as Keras computes them on JAX."""
from __future__ import annotations

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty
from . import dispatch, reduce
from .channels_last import check_input
from .storage_ops import any_storage

COLOR_MODES = {"gray": 0, "rgb_to_hsv": 1, "hsv_to_rgb": 2}


@any_storage
def color(x: Tensor, mode: str) -> Tensor:
    """x [..., 3] (channels last) -> grayscale [..., 1] or the other colour space [..., 3]."""
    x._check_alive()
    if x.ndim < 1 or x.shape[-1] != 3:
        raise ShapeError(f"{mode} expects 3 channels last. Received shape {list(x.shape)}.")
    out = empty(tuple(x.shape[:-1]) + ((1,) if mode == "gray" else (3,)))
    pixels = x.size // 3
    if pixels:
        dispatch.run("image_color.comp", defines={"MODE": COLOR_MODES[mode]}, buffers=[x, out],
                     uniforms={"n": pixels}, groups=dispatch.groups_for(pixels))
    return out


@any_storage
def auto_contrast(x: Tensor, value_range=(0.0, 255.0)) -> Tensor:
    """Keras's AutoContrast of x [batch, height, width, channels]: each image's channels
    stretched to fill value_range (constant or non-finite channels unchanged)."""
    check_input(x, 4, "auto_contrast")
    b, h, w, c = x.shape

    def compute():
        out = empty(x.shape)
        if not out.size:
            return out
        low = reduce.reduce("min", x, (1, 2), False)
        high = reduce.reduce("max", x, (1, 2), False)
        lo, hi = float(value_range[0]), float(value_range[1])
        dispatch.run("auto_contrast.comp", defines={"RESCALE": (lo, hi) != (0.0, 255.0)},
                     buffers=[x, low, high, out],
                     uniforms={"n": out.size, "channels": c, "pixels": h * w,
                               "range_lo": lo, "range_hi": hi},
                     groups=dispatch.groups_for(out.size))
        return out
    return ownership.tidy.run(compute)


def clahe_tiles(height: int, width: int, grid) -> tuple[int, int]:
    """(tile height, tile width) of a grid over an image, as Keras rounds them up."""
    grid_h, grid_w = grid
    return -(-height // grid_h), -(-width // grid_w)


@any_storage
def clahe(x: Tensor, grid, clip_limit: float, value_range) -> Tensor:
    """Keras's ContrastLimitedAdaptiveHistogramEqualization of x [batch, height, width, channels]
    (floats in value_range): per tile of the grid, a 256-bin histogram clipped at clip_limit and
    redistributed, its normalised CDF, and each pixel's value interpolated bilinearly between the
    CDFs of the four nearest tiles' centres."""
    check_input(x, 4, "clahe")
    b, h, w, c = x.shape
    grid_h, grid_w = int(grid[0]), int(grid[1])
    tile_h, tile_w = clahe_tiles(h, w, (grid_h, grid_w))

    def compute():
        out = empty(x.shape)
        if not out.size:
            return out
        lo, hi = float(value_range[0]), float(value_range[1])
        uniforms = {"height": h, "width": w, "channels": c, "grid_h": grid_h, "grid_w": grid_w,
                    "tile_h": tile_h, "tile_w": tile_w, "range_lo": lo, "range_hi": hi}
        defines = {"RESCALE": (lo, hi) != (0.0, 255.0)}
        tiles = b * grid_h * grid_w * c
        cdf = empty((tiles * 256,))
        limit = float(clip_limit) * (tile_h * tile_w) / 256.0 if clip_limit > 0 else -1.0
        dispatch.run("clahe_tiles.comp", defines=defines, buffers=[x, cdf],
                     uniforms={**uniforms, "n": tiles, "limit": limit},
                     groups=dispatch.groups_for(tiles))
        dispatch.run("clahe_apply.comp", defines=defines, buffers=[x, cdf, out],
                     uniforms={**uniforms, "n": out.size}, groups=dispatch.groups_for(out.size))
        return out
    return ownership.tidy.run(compute)



FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


@any_storage
def affine_transform(x: Tensor, transform: Tensor, interpolation: str = "bilinear",
                     fill_mode: str = "constant", fill_value: float = 0.0) -> Tensor:
    """Keras's ops.image.affine_transform of x [batch, height, width, channels] by transform
    [batch, 8] (or [8]: one for all), nearest or bilinear, with one of FILL_MODES."""
    check_input(x, 4, "affine_transform")
    b, h, w, c = x.shape
    transform._check_alive()
    count = 1 if transform.ndim == 1 else transform.shape[0]
    if transform.shape[-1] != 8 or transform.ndim not in (1, 2) or count not in (1, b) or (
            transform.ndim == 2 and count != b):
        raise ShapeError(f"affine_transform: transform of shape {list(transform.shape)} for "
                         f"images of shape {list(x.shape)} (expects [{b}, 8] or [8]).")
    out = empty(x.shape)
    if out.size:
        dispatch.run("affine_transform.comp",
                     defines={"NEAREST": interpolation == "nearest",
                              "FILL_MODE": FILL_MODES.index(fill_mode)},
                     buffers=[x, transform, out],
                     uniforms={"n": out.size, "height": h, "width": w, "channels": c,
                               "transforms": 1 if transform.ndim == 1 else b,
                               "fill": float(fill_value)},
                     groups=dispatch.groups_for(out.size))
    return out


@any_storage
def perspective_transform(x: Tensor, start_points: Tensor, end_points: Tensor,
                          interpolation: str = "bilinear", fill_value: float = 0.0) -> Tensor:
    """Keras's ops.image.perspective_transform of x [batch, height, width, channels]: the
    homography taking end_points to start_points ([batch, 4, 2] each, (x, y)) solved per image,
    each output pixel sampled there (nearest or bilinear, constant fill)."""
    check_input(x, 4, "perspective_transform")
    b, h, w, c = x.shape
    for points in (start_points, end_points):
        points._check_alive()
        if tuple(points.shape) != (b, 4, 2):
            raise ShapeError(f"perspective_transform: points of shape {list(points.shape)} for "
                             f"images of shape {list(x.shape)} (expects [{b}, 4, 2]).")

    def compute():
        out = empty(x.shape)
        if not out.size:
            return out
        homography = empty((b, 8))
        dispatch.run("homography.comp", buffers=[start_points, end_points, homography],
                     uniforms={"n": b}, groups=dispatch.groups_for(b))
        dispatch.run("affine_transform.comp",
                     defines={"NEAREST": interpolation == "nearest", "FILL_MODE": 0,
                              "PERSPECTIVE": True},
                     buffers=[x, homography, out],
                     uniforms={"n": out.size, "height": h, "width": w, "channels": c,
                               "transforms": b, "fill": float(fill_value)},
                     groups=dispatch.groups_for(out.size))
        return out
    return ownership.tidy.run(compute)
