"""Convolutions, channels-last: Conv1D/Conv2D (groups, dilation, strides), depthwise, transposed.

Weights are packed once (pack_conv / pack_depthwise / pack_conv_transpose, called by layers at build
time) into the vec4 layouts the shaders read; `conv2d` / `depthwise_conv2d` then only dispatch.
A Conv1D is a Conv2D over one row; a transposed convolution is a convolution over the input seen
with (stride - 1) zeros between its samples, with the kernel flipped and its in/out swapped.

Where the device's tuning says conv_gemm (GPUs), a convolution of one group runs as an implicit
GEMM on the tiled GEMM kernel (shaders/conv_gemm.comp, ops/gemm_tiles.py), its weights packed as
a plain [kh * kw * cin][cout] matrix, which conv2d.comp reads too (for what the GEMM kernel does
not do: fused pooling, transposed convolutions, inputs whose channels are not a multiple of 4).

pack_conv may store the weights as float16 (load_model's storage_dtype="float16",
ops/half_weights.py): both kernels then read them through shaders/half_weights.glsl, unpacking
the halves to float32 (an rg32ui view where the tuning reads weights through views); the bias,
the input and the sums stay float32. Depthwise kernels are always float32.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..runtime import buffer_views, context, tuning
from ..errors import GPULimitError, ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch, gemm_tiles, half_weights, splits, work
from . import storage_ops
from .storage_ops import any_storage

def local_size() -> int:
    """Lanes per work group of the convolution kernels (kerasgl/runtime/tuning.py conv_local_size).
    llvmpipe hands whole groups to its threads, so more, smaller groups balance better: ResNet50
    planned predict 229-236 ms with 16 vs 244-248 with 32; 8 rather than 16 takes 11-12% off the
    7x7 layers (7 groups of 16 on 2 threads became 14 of 8) and changes nothing elsewhere."""
    return tuning.current().conv_local_size


@dataclass(frozen=True)
class Pointwise:
    """Duck type of kerasgl.layers.activation_functions.Pointwise: ops take any object with these fields."""
    function: str = "act_linear"
    params: tuple = ()


LINEAR = Pointwise()


def clamp_bounds(activation) -> tuple[float, float] | None:
    """(lo, hi) where `activation` is min(max(x, lo), hi) (linear, relu, relu6, ReLU(max_value)
    without slope or threshold), else None. Convolutions run these as one shader variant with the
    bounds as uniforms: llvmpipe JIT-compiles each variant of the large unrolled conv kernels at
    its first dispatch (~1-2 s each on 2 cores), and linear/relu/relu6 variants of one geometry
    otherwise each cost a compile (MobileNetV2 224 cold first call 12.0 s -> see
    scripts/probe_compile.py). Same values: min/max are exact (a ReLU's 0 may become -0.0)."""
    function, params = activation.function, tuple(activation.params)
    if function == "act_linear":
        return (-math.inf, math.inf)
    if function == "act_relu":
        return (0.0, math.inf)
    if function == "act_relu6":
        return (0.0, 6.0)
    if function == "act_relu_full" and len(params) == 3 and params[1] == 0 and params[2] == 0:
        # A negative max_value means none; a NaN one makes every output NaN in Keras, which
        # act_clamp's compares would not give: it runs as the general act_relu_full.
        if math.isnan(params[0]):
            return None
        return (0.0, math.inf if params[0] < 0 else float(params[0]))
    return None


def activation_settings(activation) -> tuple[dict, dict]:
    """(defines, uniforms) that select `activation` in conv2d.comp / depthwise_conv2d.comp."""
    bounds = clamp_bounds(activation)
    if bounds is not None:
        return {"ACT": "act_clamp", "ACT_CLAMP": True}, {"act_lo": bounds[0], "act_hi": bounds[1]}
    return ({"ACT": activation.function, "ACT_CLAMP": False},
            {f"act_p{i}": float(v) for i, v in enumerate(activation.params)})


# -------------------------------------------------------------------------------------------------
# Geometry (Keras's rules)
# -------------------------------------------------------------------------------------------------
def effective_size(kernel: int, dilation: int) -> int:
    return (kernel - 1) * dilation + 1


def conv_padding(size: int, kernel: int, stride: int, dilation: int, padding: str) -> tuple[int, int, int]:
    """(output size, pad before, pad after) of one spatial axis, as Keras / TF compute them."""
    span = effective_size(kernel, dilation)
    if padding == "valid":
        out = (size - span) // stride + 1 if size >= span else 0
        return out, 0, 0
    if padding == "same":
        out = -(-size // stride)
        total = max((out - 1) * stride + span - size, 0)
        return out, total // 2, total - total // 2
    if padding == "causal":
        out = (size + span - 1 - span) // stride + 1
        return out, span - 1, 0
    raise ValueError(f"Unknown padding {padding!r}; expected 'valid', 'same' or 'causal'.")


def conv_transpose_padding(size: int, kernel: int, stride: int, dilation: int, padding: str,
                           output_padding: int | None) -> tuple[int, int, int]:
    """(output size, pad before, pad after) of the equivalent stride-1 convolution over the
    zero-dilated input: Keras 3's rule (backend_utils._convert_conv_transpose_padding_args_...)."""
    span = effective_size(kernel, dilation)
    if padding == "valid":
        extra = max(span, stride) - span if output_padding is None else output_padding
        before, after = span - 1, span - 1 + extra
    elif padding == "same":
        total = stride + span - 2 if output_padding is None else span + span % 2 - 2 + output_padding
        before = min(total // 2 + total % 2, span - 1)
        after = total - before
    else:
        raise ValueError(f"Unknown padding {padding!r} for a transposed convolution.")
    dilated = (size - 1) * stride + 1
    return dilated + before + after - span + 1, before, after


# -------------------------------------------------------------------------------------------------
# Packed kernels
# -------------------------------------------------------------------------------------------------
SCALAR_PIX = 16


@dataclass(frozen=True)
class ConvPiece:
    """Output-channel blocks [first_block, first_block + blocks) of a packed kernel (numbered over
    all groups, in packed order), with their weights and bias in buffers of their own: a kernel
    larger than one storage block is several (ops/splits.py), one dispatch each."""
    first_block: int
    blocks: int
    weights: Tensor          # [blocks][kh][kw][cin_pg][cout_vec] vec4 (float32, or float16 halves)
    bias: Tensor             # [blocks][cout_vec] vec4
    row_stride: int | None = None   # the kernel's, unless given (a matmul's piece of B: width / 4)


@dataclass(frozen=True)
class ConvKernel:
    """A convolution kernel packed for shaders/conv2d.comp, with its bias, on the GPU."""
    pieces: tuple            # ConvPiece..., in block order; one unless the weights exceed a block
    kh: int
    kw: int
    cin_pg: int
    cout: int
    groups: int
    cout_vec: int
    input_dilation: tuple = (1, 1)  # > 1: a transposed convolution with these strides
    row_stride: int | None = None   # vec4s between input channels' weights; None: packed (cout_vec)
                                    # (matmul passes its B unpacked: a [K][N] matrix, N / 4)
    block_stride: int | None = None  # vec4s between output-channel blocks; None: packed

    @property
    def cout_pg(self) -> int:
        return self.cout // self.groups

    @property
    def matrix(self) -> bool:
        """Whether the weights are a plain [kh * kw * cin][columns] matrix (per piece) rather
        than packed per output-channel block: what conv_gemm.comp reads."""
        return self.groups == 1 and self.block_stride == self.cout_vec

    @property
    def blocks_pg(self) -> int:
        return math.ceil(self.cout_pg / (4 * self.cout_vec))

    @property
    def weights(self) -> Tensor:
        """The packed weights ([groups][blocks][kh][kw][cin_pg][cout_vec] vec4), for kernels that
        read them from one buffer (conv3d): GPULimitError where they are split."""
        return self._only_piece().weights

    @property
    def bias(self) -> Tensor:
        """The packed bias ([groups][blocks][cout_vec] vec4); see `weights`."""
        return self._only_piece().bias

    def _only_piece(self) -> ConvPiece:
        if len(self.pieces) != 1:
            raise GPULimitError(
                f"This convolution's weights ({self.kh}x{self.kw}x{self.cin_pg} -> {self.cout}) "
                f"exceed one shader storage block and are split over {len(self.pieces)} buffers, "
                "which this kernel cannot read (only 1D/2D convolutions and Dense split).")
        return self.pieces[0]

    def dispose(self) -> None:
        for piece in self.pieces:
            piece.weights.dispose()
            piece.bias.dispose()


def choose_cout_vec(cout_pg: int) -> int:
    """vec4s of output channels per invocation (8: 32 channels, measured best with choose_pix);
    fewer for small groups so they do not compute mostly padding. Rounded up to a power of two
    (capped by the tuning): each distinct value is a kernel variant llvmpipe JIT-compiles at its
    first dispatch (~1.3 s cold), and 24 channels as one 32-channel block instead of 6 vec4s costs
    MobileNetV2 no measurable time while saving it a variant."""
    limit = tuning.current().conv_cout_vec
    needed = max(1, math.ceil(cout_pg / 4))
    return max(1, min(limit, 1 << (needed - 1).bit_length()))


def pack_conv(kernel: np.ndarray, bias: np.ndarray | None, groups: int, upload: Callable,
              input_dilation: tuple = (1, 1), matrix: bool | None = None,
              dtype: str = "float32") -> ConvKernel:
    """Pack a Keras Conv2D kernel [kh, kw, cin_pg, cout] (Conv1D: [k, cin_pg, cout]) and bias.
    `upload(array) -> Tensor` puts an array on the GPU (a layer's `upload`, which owns it).
    matrix: lay the weights out as a matrix (what the implicit GEMM reads, and conv2d.comp too);
    None: where the device's tuning runs convolutions as GEMMs (conv_gemm) and the kernel is one
    group, not transposed. False for a kernel read by a shader that knows the packed layout only
    (conv3d.comp).
    dtype: how the packed weights are stored, "float32" or "float16" (halves, which conv2d.comp
    and conv_gemm.comp read: not for conv3d.comp); the bias stays float32."""
    kernel = np.asarray(kernel, dtype=np.float32)
    if kernel.ndim == 3:
        kernel = kernel[None]
    kh, kw, cin_pg, cout = kernel.shape
    if cout % groups:
        raise ShapeError(f"A grouped convolution needs filters ({cout}) divisible by groups ({groups}).")
    cout_pg = cout // groups
    cout_vec = choose_cout_vec(cout_pg)
    item = half_weights.item_bytes(dtype)          # bytes per stored weight
    # Narrower blocks where one block's weights would not fit a storage block by itself.
    while (cout_vec > 1
           and kh * kw * cin_pg * 4 * item * cout_vec + 32 > splits.storage_block_bytes()):
        cout_vec //= 2
    block = 4 * cout_vec
    blocks_pg = math.ceil(cout_pg / block)
    padded = blocks_pg * block
    # [kh, kw, cin_pg, groups, cout_pg] -> pad cout_pg -> [groups, blocks, kh, kw, cin_pg, block]
    w = kernel.reshape(kh, kw, cin_pg, groups, cout_pg)
    w = np.pad(w, [(0, 0)] * 4 + [(0, padded - cout_pg)])
    w = w.reshape(kh, kw, cin_pg, groups, blocks_pg, block).transpose(3, 4, 0, 1, 2, 5)
    b = np.zeros((groups, padded), np.float32)
    if bias is not None:
        b[:, :cout_pg] = np.asarray(bias, np.float32).reshape(groups, cout_pg)
    # One piece of whole output-channel blocks per storage block (ops/splits.py); a kernel that
    # fits (nearly all) is one piece holding every block, packed as before.
    n_blocks = groups * blocks_pg
    # For the implicit GEMM (tuning conv_gemm; one group, not transposed): each piece's weights
    # as a [kh * kw * cin][its columns] matrix, read by both convolution kernels (row stride:
    # its width; block stride: one block's width).
    if matrix is None:
        matrix = (tuning.current().conv_gemm and groups == 1 and tuple(input_dilation) == (1, 1))
    elif matrix and groups != 1:
        raise ValueError("pack_conv: a grouped kernel has no matrix layout.")
    w = np.ascontiguousarray(w).reshape(n_blocks, -1)
    b = b.reshape(n_blocks, -1)
    # weights_layout may add 2 vec4s (32 bytes) to a piece.
    # The layer whose bound `upload` this is names itself in the error, if the kernel cannot fit.
    owner = getattr(getattr(upload, "__self__", None), "name", None)
    cut = splits.pieces(n_blocks, w.shape[1] * item,
                        f"{f'Layer {owner!r}: its' if owner else 'A'} {kh}x{kw} convolution kernel"
                        f" of {cin_pg} to {cout} channels", f"block(s) of {block} output channels",
                        spare=32)

    def stored(flat):     # the weights as the tuning lays them out, in `dtype`
        return half_weights.upload_as(upload, weights_layout(flat), dtype)

    if matrix:
        rows = kh * kw * cin_pg
        parts = tuple(ConvPiece(first, size, stored(np.ascontiguousarray(
                          w[first:first + size].reshape(size, rows, block).transpose(1, 0, 2))
                          .reshape(-1)), upload(b[first:first + size].reshape(-1)),
                          row_stride=size * cout_vec) for first, size in cut)
        return ConvKernel(parts, kh, kw, cin_pg, cout, groups, cout_vec, tuple(input_dilation),
                          block_stride=cout_vec)
    parts = tuple(ConvPiece(first, size, stored(w[first:first + size].reshape(-1)),
                            upload(b[first:first + size].reshape(-1))) for first, size in cut)
    return ConvKernel(parts, kh, kw, cin_pg, cout, groups, cout_vec, tuple(input_dilation))


def weights_layout(flat: np.ndarray) -> np.ndarray:
    """Packed weights as this device's tuning lays them out: as packed, or with a vec4 added
    where their length is a power of two (tuning conv_weights_not_power_of_two, llvmpipe's)."""
    return not_power_of_two_texels(flat) if tuning.current().conv_weights_not_power_of_two else flat


def not_power_of_two_texels(flat: np.ndarray) -> np.ndarray:
    """`flat` with one zero vec4 appended when its vec4 count is a power of two (never read: the
    packed layout is addressed by strides). llvmpipe specialises a program for whether an image's
    width is a power of two, so weights of 2^k texels (most 1x1 convolutions: 256 -> 64 is 4096)
    next to others made a second JIT compile of the same conv2d variant: ~1.9 s of ResNet50's
    cold first predict (1.4 s for the 16-pixel tile, 0.5 s for the 8-pixel one)."""
    texels = flat.size // 4
    extra = 1 if texels & (texels - 1) == 0 else 0
    if extra and texels == 1:
        extra = 2                 # 1 -> 3 texels (2 is a power of two too)
    return np.concatenate([flat, np.zeros(4 * extra, flat.dtype)]) if extra else flat


def pack_conv_transpose(kernel: np.ndarray, bias: np.ndarray | None, stride_hw: tuple[int, int],
                        upload: Callable, dtype: str = "float32") -> ConvKernel:
    """Pack a Keras Conv2DTranspose kernel [kh, kw, cout, cin] as the equivalent convolution's:
    flipped in space, in and out swapped (1D: [k, cout, cin]); dtype as pack_conv's."""
    kernel = np.asarray(kernel, dtype=np.float32)
    if kernel.ndim == 3:
        kernel = kernel[None]
    flipped = kernel[::-1, ::-1].transpose(0, 1, 3, 2)
    return pack_conv(flipped, bias, 1, upload, input_dilation=tuple(stride_hw), dtype=dtype)


# A matmul run on this kernel (ops/matmul.py) may use 20-pixel tiles: 1024^3 at 78 GFLOP/s where
# 16-pixel tiles give 75 (interleaved runs on llvmpipe; 24 pixels spill: 58). Convolutions of
# models keep 16 at most: one JIT-compiled variant fewer on a cold start.
GEMM_PIX = 20


# The most pixel slots a layer's tiles may hold per real pixel. 7x7 layers (49 pixels) take
# 16-pixel tiles under this bound (64 slots: 1.31), 8-pixel ones under 1.15, and the wider tile
# is faster despite the empty slots: ResNet50's 3x3 512->512 at 7x7 3.67 against 4.27 ms, its
# 1x1 512->2048 1.83 against 1.94; whole models in interleaved rounds ResNet50 123.2 -> 118.9
# ms, MobileNetV2 and EfficientNetB0 unchanged; and fewer 8-pixel variants to JIT-compile on a
# cold start (ResNet50 5.6 -> 4.5 s, MobileNetV2 6.4 -> 5.2, EfficientNetB0 9.7 -> 8.4).
MAX_TILE_WASTE = 1.35


def choose_pix(n_pixels: int, blocks: int, widest: int = 16) -> int:
    """Output pixels per invocation. llvmpipe gathers every SSBO load lane by lane, so the kernel
    is bound by loads: a tile of PIX pixels x 4*COUT_VEC channels does 16*PIX*COUT_VEC
    multiply-adds per PIX + 4*COUT_VEC vec4 loads. Measured on 56x56x64->64 3x3: 4x16 tiles
    8 GFLOP/s, 8x32 27, 16x32 28-34, 32x32 17-21 (spills). Smaller tiles where the tiles would
    hold too many empty slots (MAX_TILE_WASTE), or where fewer than two work groups would be left
    (one per CPU thread: asking for four made the small CNN's 11x11x32->64 conv use 2-pixel
    tiles, and its predict 0.95 ms where two groups of 4-pixel tiles take 0.83)."""
    most = widest if widest > 16 else tuning.current().conv_pix
    lanes = local_size()
    for pix in (widest, 16, 8, 4, 2) if widest > 16 else (16, 8, 4, 2):
        tiles = math.ceil(n_pixels / pix)
        if pix <= most and tiles * pix <= MAX_TILE_WASTE * n_pixels and tiles * blocks > lanes:
            return pix
    return 1


# conv2d.comp and conv_gemm.comp read the input and the residual where they are stored, a texture
# included (texture_operand.glsl), and write the output as a texture when they are: no copies.
@any_storage(in_place=("x", "residual"))
def conv2d(x: Tensor, kernel: ConvKernel, strides=(1, 1), dilation=(1, 1),
           padding=((0, 0), (0, 0)), activation=LINEAR, out_hw=None, pool: int = 1,
           residual: Tensor | None = None, widest_tile: int = 16) -> Tensor:
    """y[n, oy, ox, :] = act(bias + sum over kh, kw, cin of x * w), x of shape [n, h, w, cin].
    `padding` is ((top, bottom), (left, right)) in input pixels (of the dilated input for a
    transposed convolution); out_hw, when given, overrides the computed output size.
    pool > 1: the max over pool x pool windows (stride pool, valid) of that output instead, in
    the same dispatch; `activation` must then be monotone (a clamp: see clamp_bounds).
    residual: a tensor of the output's shape added before the activation (a residual
    connection's Add, fused at load); output channels per group must be a multiple of 4.
    widest_tile: the most output pixels per invocation (GEMM_PIX for a large matmul)."""
    return conv2d_into(x, kernel, strides, dilation, padding, activation, out_hw, pool, residual,
                       widest_tile, storage_ops.result_storage(x, residual))


def conv2d_into(x: Tensor, kernel: ConvKernel, strides, dilation, padding, activation, out_hw,
                pool: int, residual: Tensor | None, widest_tile: int, storage: str) -> Tensor:
    """conv2d's work, its output allocated in `storage` ("texture" only where storage_ops
    allows textures in place). Takes x and the residual in either storage (read in place): for
    an op that runs on this kernel and decides its result's storage itself (matmul_as_conv: a
    texture input whose weights are a buffer B gives a buffer)."""
    x._check_alive()
    if x.ndim != 4:
        raise ShapeError(f"conv2d expects a 4D input [batch, height, width, channels]. "
                         f"Received shape {list(x.shape)}.")
    n, h, w, cin = x.shape
    if cin != kernel.cin_pg * kernel.groups:
        raise ShapeError(f"conv2d: the kernel expects {kernel.cin_pg * kernel.groups} input channels. "
                         f"Received input shape {list(x.shape)}.")
    (top, bottom), (left, right) = padding
    sh, sw = kernel.input_dilation
    if out_hw is None:
        dh = (h - 1) * sh + 1 + top + bottom
        dw = (w - 1) * sw + 1 + left + right
        out_hw = ((dh - effective_size(kernel.kh, dilation[0])) // strides[0] + 1,
                  (dw - effective_size(kernel.kw, dilation[1])) // strides[1] + 1)
    oh, ow = out_hw
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"conv2d: a {kernel.kh}x{kernel.kw} kernel (dilation {list(dilation)}) does "
                         f"not fit input shape {list(x.shape)}; the output would be {[n, oh, ow, kernel.cout]}.")
    if pool > 1:
        if clamp_bounds(activation) is None:
            raise ValueError("conv2d: pooling inside the convolution needs a monotone activation.")
        oh, ow = oh // pool, ow // pool
        if oh <= 0 or ow <= 0:
            raise ShapeError(f"conv2d: a {pool}x{pool} max pooling does not fit the convolution's "
                             f"output of input shape {list(x.shape)}.")
    if residual is not None and (tuple(residual.shape) != (n, oh, ow, kernel.cout) or pool > 1
                                 or kernel.cout_pg % 4):
        raise ShapeError(f"conv2d: a residual of shape {list(residual.shape)} cannot be added to "
                         f"an output of shape {[n, oh, ow, kernel.cout]} (pool {pool}, "
                         f"{kernel.cout_pg} channels per group).")
    out = empty((n, oh, ow, kernel.cout), storage=storage)
    if out.size == 0:
        return out
    n_pixels = n * oh * ow * pool * pool
    blocks = kernel.groups * kernel.blocks_pg
    cin_vec4 = kernel.cin_pg % 4 == 0 and cin % 4 == 0
    choice = tuning.current()
    if (choice.conv_gemm and kernel.matrix and pool == 1 and cin_vec4 and kernel.cout % 4 == 0
            and kernel.input_dilation == (1, 1)
            and math.ceil(n_pixels / gemm_tiles.current().m) <= dispatch.MAX_GROUPS_PER_DIM):
        _conv_gemm(x, kernel, out, strides, dilation, (top, left), activation, residual)
        return out
    pix = choose_pix(n_pixels, blocks, widest_tile)
    if not cin_vec4:
        # Scalar-input layers (mostly an RGB stem, once per model) get their own variant: a
        # smaller tile halves its cold JIT compile at little cost to one layer.
        pix = min(pix, SCALAR_PIX)
    if pool > 1:
        pix = max(pix, pool * pool) // (pool * pool) * (pool * pool)   # whole windows per tile
    tiles = math.ceil(n_pixels / pix)
    lanes = local_size()
    x_format = "rgba32f" if cin_vec4 else "r32f"
    # Views are of buffers: a texture input (or residual) is read in place instead.
    x_view = (choice.conv_input_image and x.storage == "buffer"
              and buffer_views.fits(x.nbytes, x_format))
    act_defines, act_uniforms = activation_settings(activation)
    defines = {
        "LOCAL_SIZE": lanes, "PIX": pix, "COUT_VEC": kernel.cout_vec,
        "CIN_VEC4": cin_vec4,
        "VEC_OUT": kernel.cout_pg % 4 == 0,
        "INPUT_DIL_H": sh, "INPUT_DIL_W": sw, "POOL": pool,
        **act_defines,
        "W_VIEW": False, "X_VIEW": x_view,       # W_VIEW: each piece's own, below
        "RESIDUAL": residual is not None,
        "R_VIEW": (residual is not None and choice.conv_input_image
                   and residual.storage == "buffer" and buffer_views.fits(residual.nbytes)),
    }
    block_stride = (kernel.kh * kernel.kw * kernel.cin_pg * kernel.cout_vec
                    if kernel.block_stride is None else kernel.block_stride)
    uniforms = {"in_h": h, "in_w": w, "cin": cin, "out_h": oh, "out_w": ow, "cout": kernel.cout,
                "cin_pg": kernel.cin_pg, "cout_pg": kernel.cout_pg, "blocks_pg": kernel.blocks_pg,
                "pad_top": top, "pad_left": left, "n_pixels": n_pixels,
                "kernel_h": kernel.kh, "kernel_w": kernel.kw, "stride_h": strides[0],
                "stride_w": strides[1], "dil_h": dilation[0], "dil_w": dilation[1],
                "w_block": block_stride, **act_uniforms}
    # One dispatch per piece of the weights (one piece unless they exceed a storage block): each
    # computes its blocks of output channels, for every pixel, into the one output.
    for piece in kernel.pieces:
        piece_work = conv_work(x, kernel, piece, n_pixels, n * oh * ow, residual)
        w_format = half_weights.view_format(piece.weights)    # float16: an rg32ui view
        w_view = choice.conv_weights_image and buffer_views.fits(piece.weights.nbytes, w_format)
        row_stride = piece.row_stride or kernel.row_stride or kernel.cout_vec
        n_work = tiles * piece.blocks
        views = ([(0, x, x_format)] if x_view else []) \
            + ([(1, piece.weights, w_format)] if w_view else []) \
            + ([(2, residual)] if defines["R_VIEW"] else [])
        buffers = [x, piece.weights, piece.bias, out] + ([residual] if residual is not None else [])
        storage_ops.run_in_place("conv2d.comp", **_conv_textures(residual),
                     defines={**defines, "W_VIEW": w_view, **half_weights.defines(piece.weights)},
                     buffers=buffers,
                     views=views, uniforms={**uniforms, "block_base": piece.first_block,
                                            "n_blocks": piece.blocks, "n_work": n_work,
                                            "w_row": row_stride},
                     groups=dispatch.groups_for(n_work, lanes), work=piece_work)
    return out


def _conv_gemm(x, kernel, out, strides, dilation, pad, activation, residual) -> None:
    """conv2d's work as an implicit GEMM (shaders/conv_gemm.comp) into `out`: one dispatch per
    piece of the weights, a work group per tile of output pixels x output channels."""
    n, h, w, cin = x.shape
    _, oh, ow, cout = out.shape
    tiles = gemm_tiles.current()
    choice = tuning.current()
    pointwise = (kernel.kh == kernel.kw == 1 and tuple(strides) == (1, 1) and pad == (0, 0)
                 and (oh, ow) == (h, w))
    x_view = choice.conv_input_image and x.storage == "buffer" and buffer_views.fits(x.nbytes)
    r_view = (residual is not None and choice.conv_input_image and residual.storage == "buffer"
              and buffer_views.fits(residual.nbytes))
    act_defines, act_uniforms = activation_settings(activation)
    defines = {**tiles.defines(), **act_defines, "POINTWISE": pointwise, "X_VIEW": x_view,
               "RESIDUAL": residual is not None, "R_VIEW": r_view}
    n_pixels = n * oh * ow
    uniforms = {"in_h": h, "in_w": w, "cin": cin, "out_h": oh, "out_w": ow, "cout": cout,
                "kernel_w": kernel.kw, "stride_h": strides[0], "stride_w": strides[1],
                "dil_h": dilation[0], "dil_w": dilation[1], "pad_top": pad[0],
                "pad_left": pad[1], "n_pixels": n_pixels,
                "k_total": kernel.kh * kernel.kw * cin, **act_uniforms}
    block = 4 * kernel.cout_vec
    for piece in kernel.pieces:
        channels = piece_channels(kernel, piece)
        w_format = half_weights.view_format(piece.weights)    # float16: an rg32ui view
        w_view = choice.conv_weights_image and buffer_views.fits(piece.weights.nbytes, w_format)
        views = ([(0, x)] if x_view else []) + ([(1, piece.weights, w_format)] if w_view else []) \
            + ([(2, residual)] if r_view else [])
        buffers = [x, piece.weights, piece.bias, out] + ([residual] if residual is not None else [])
        storage_ops.run_in_place("conv_gemm.comp", **_conv_textures(residual),
                     defines={**defines, "W_VIEW": w_view, **half_weights.defines(piece.weights)},
                     buffers=buffers,
                     views=views,
                     uniforms={**uniforms, "n_columns": channels,
                               "n_first": piece.first_block * block,
                               "w_row": piece.row_stride or kernel.row_stride},
                     groups=(math.ceil(channels / tiles.n), math.ceil(n_pixels / tiles.m), 1),
                     work=conv_work(x, kernel, piece, n_pixels, n_pixels, residual))


def _conv_textures(residual) -> dict:
    """run_in_place's operands of conv2d.comp and conv_gemm.comp: the input (binding 0), the
    residual (4) and the output (3) may be textures."""
    return {"reads": {0: "X", 4: "R"} if residual is not None else {0: "X"}, "writes": {3: "Y"}}


def conv_work(x, kernel: ConvKernel, piece: ConvPiece, computed: int, written: int,
              residual) -> tuple[int, int]:
    """The work (ops/work.py) of one piece's dispatch: a multiply-add per tap, input channel,
    pixel `computed` (a fused pooling computes its windows' pixels) and output channel of the
    piece; every input, weight (2 bytes stored as float16), bias, output pixel `written` (and
    residual) value once."""
    channels = piece_channels(kernel, piece)
    taps = kernel.kh * kernel.kw * kernel.cin_pg
    outputs = written * channels * (2 if residual is not None else 1)
    moved = (work.nbytes(x) + half_weights.item_bytes(piece.weights.dtype) * taps * channels
             + 4 * (channels + outputs))
    return 2 * computed * taps * channels, moved


def piece_channels(kernel: ConvKernel, piece: ConvPiece) -> int:
    """The real output channels (padding left out) a piece of a packed kernel computes."""
    if len(kernel.pieces) == 1:
        return kernel.cout
    block = 4 * kernel.cout_vec
    return sum(min(block, kernel.cout_pg - (b % kernel.blocks_pg) * block)
               for b in range(piece.first_block, piece.first_block + piece.blocks))


# -------------------------------------------------------------------------------------------------
# Depthwise
# -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DepthwiseKernel:
    """A depthwise kernel packed for shaders/depthwise_conv2d.comp, with its bias, on the GPU."""
    weights: Tensor          # [kh][kw][cout padded to 4] vec4, cout = cin * multiplier
    bias: Tensor             # [cout padded to 4]
    kh: int
    kw: int
    cin: int
    multiplier: int

    @property
    def cout(self) -> int:
        return self.cin * self.multiplier

    def dispose(self) -> None:
        self.weights.dispose()
        self.bias.dispose()


def pack_depthwise(kernel: np.ndarray, bias: np.ndarray | None, upload: Callable) -> DepthwiseKernel:
    """Pack a Keras DepthwiseConv2D kernel [kh, kw, cin, multiplier] (1D: [k, cin, multiplier])."""
    kernel = np.asarray(kernel, dtype=np.float32)
    if kernel.ndim == 3:
        kernel = kernel[None]
    kh, kw, cin, mult = kernel.shape
    cout = cin * mult
    padded = math.ceil(cout / 4) * 4
    w = np.zeros((kh, kw, padded), np.float32)
    w[:, :, :cout] = kernel.reshape(kh, kw, cout)   # output channel c * mult + m, as Keras orders
    b = np.zeros(padded, np.float32)
    if bias is not None:
        b[:cout] = np.asarray(bias, np.float32).reshape(cout)
    return DepthwiseKernel(upload(weights_layout(w.reshape(-1))), upload(b), kh, kw, cin, mult)


def choose_row_tile(out_w: int, rows_x_blocks: int, stride: int, kernel_span: int) -> int:
    """Adjacent output pixels per depthwise invocation: they share input columns, so wider tiles
    load less per output (112x112x32 3x3: 1 pixel 1.0 GFLOP/s, 8 pixels 2.7, 16 pixels 4.7);
    narrower where the columns kept would spill (stride 2: 16 pixels slower than 8), where a row's
    last tile would be mostly padding, or where too few invocations would be left for the CPU
    threads' SIMD lanes."""
    lanes = local_size()
    for pix in (16, 8, 4, 2):
        if (pix - 1) * stride + kernel_span > 20:
            continue
        tiles = math.ceil(out_w / pix)
        if tiles * pix <= 1.15 * out_w and tiles * rows_x_blocks >= 2 * lanes:
            return pix
    return 1


@dataclass(frozen=True)
class DepthwiseTiles:
    """The work group of the tiled depthwise kernel (shaders/depthwise_conv2d_tiled.glsl): h x w
    output pixels for c vec4s of channels, pix adjacent outputs of a row per invocation, its
    input tile (the outputs' window with the kernel's halo) staged in shared memory."""
    h: int
    w: int
    c: int
    pix: int

    @property
    def invocations(self) -> int:
        return self.c * self.h * self.w // self.pix

    def input_tile(self, strides, dilation, kh: int, kw: int) -> tuple[int, int]:
        """(rows, columns) of input the tile's outputs read."""
        return ((self.h - 1) * strides[0] + effective_size(kh, dilation[0]),
                (self.w - 1) * strides[1] + effective_size(kw, dilation[1]))

    def shared_bytes(self, strides, dilation, kh: int, kw: int) -> int:
        rows, cols = self.input_tile(strides, dilation, kh, kw)
        return rows * cols * self.c * 16

    def problems(self, limits) -> list[str]:
        """What makes this shape unusable whatever the kernel (empty: none)."""
        found = []
        if self.w % self.pix:
            found.append(f"depthwise_tile_w={self.w} is not a multiple of "
                         f"depthwise_tile_pix={self.pix}")
        elif self.invocations > min(limits.max_work_group_invocations,
                                    limits.max_work_group_size[0]):
            found.append(f"a work group of {self.invocations} invocations (depthwise_tile_c x "
                         f"depthwise_tile_h x depthwise_tile_w / depthwise_tile_pix) exceeds the "
                         f"device's {limits.max_work_group_invocations} (sizes "
                         f"{limits.max_work_group_size})")
        return found


def tuned_depthwise_tiles() -> DepthwiseTiles:
    """The tile shape the device's tuning asks for; SettingError where it cannot run here."""
    return gemm_tiles.checked_for_device("tiled depthwise kernel", lambda choice: DepthwiseTiles(
        choice.depthwise_tile_h, choice.depthwise_tile_w, choice.depthwise_tile_c,
        choice.depthwise_tile_pix))


def depthwise_tiles(kernel: DepthwiseKernel, strides, dilation,
                    out_h: int) -> DepthwiseTiles | None:
    """The tiled kernel's work group for this convolution, where the device's tuning asks for it
    (depthwise_tiled) and its input tile fits the device's shared memory
    (GL_MAX_COMPUTE_SHARED_MEMORY_SIZE); None: the row kernel.

    The tuning's tile, with the lanes that would idle moved along the row (the group keeps its
    size): half the channel blocks while half still covers the kernel's (an image's 3 channels
    take one vec4 of the 4), half the rows while half still covers the output's (a
    DepthwiseConv1D runs on one row), each time twice the columns. Where that tile does not fit
    (large strides or dilations: the halo grows with them), fewer channel blocks are tried, down
    to whole 64-lane waves. A tile shape the device cannot run at all (an override) is refused,
    naming the setting, like the GEMM tiles (ops/gemm_tiles.py)."""
    if not tuning.current().depthwise_tiled:
        return None
    tiles = tuned_depthwise_tiles()
    cblocks = math.ceil(kernel.cout / 4)
    while tiles.c > 1 and tiles.c // 2 >= cblocks:
        tiles = DepthwiseTiles(tiles.h, tiles.w * 2, tiles.c // 2, tiles.pix)
    while tiles.h > 1 and tiles.h // 2 >= out_h:
        tiles = DepthwiseTiles(tiles.h // 2, tiles.w * 2, tiles.c, tiles.pix)
    room = context.limits().max_shared_memory_bytes
    fewest = min(64, tiles.invocations)
    while tiles.shared_bytes(strides, dilation, kernel.kh, kernel.kw) > room:
        if tiles.c == 1 or tiles.invocations // 2 < fewest:
            return None
        tiles = DepthwiseTiles(tiles.h, tiles.w, tiles.c // 2, tiles.pix)
    return tiles


# depthwise_conv2d.comp (both forms) reads x where it is stored, a texture included
# (texture_operand.glsl), and writes the output as a texture for one: no copies.
@any_storage(in_place=("x",))
def depthwise_conv2d(x: Tensor, kernel: DepthwiseKernel, strides=(1, 1), dilation=(1, 1),
                     padding=((0, 0), (0, 0)), activation=LINEAR) -> Tensor:
    """Depthwise convolution of x [n, h, w, cin]: y[..., c * mult + m] = act(bias + sum x[..., c] * w).

    Runs shaders/depthwise_conv2d.comp: in work groups that stage their input tile in shared
    memory where the device's tuning says depthwise_tiled (GPUs; depthwise_tiles), else with
    each invocation reading the input window of a few adjacent outputs of a row itself (the
    row kernel: llvmpipe's choice, and where a tile does not fit)."""
    x._check_alive()
    if x.ndim != 4 or x.shape[3] != kernel.cin:
        raise ShapeError(f"depthwise_conv2d expects an input [batch, height, width, {kernel.cin}]. "
                         f"Received shape {list(x.shape)}.")
    n, h, w, cin = x.shape
    (top, bottom), (left, right) = padding
    oh = (h + top + bottom - effective_size(kernel.kh, dilation[0])) // strides[0] + 1
    ow = (w + left + right - effective_size(kernel.kw, dilation[1])) // strides[1] + 1
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"depthwise_conv2d: a {kernel.kh}x{kernel.kw} kernel (dilation "
                         f"{list(dilation)}) does not fit input shape {list(x.shape)}.")
    cout = kernel.cout
    out = empty((n, oh, ow, cout), storage=storage_ops.result_storage(x))
    if out.size == 0:
        return out
    cblocks = math.ceil(cout / 4)
    act_defines, act_uniforms = activation_settings(activation)
    vec_in = kernel.multiplier == 1 and cin % 4 == 0
    choice = tuning.current()
    x_view = (vec_in and choice.depthwise_views and x.storage == "buffer"
              and buffer_views.fits(x.nbytes))
    w_view = choice.depthwise_views and buffer_views.fits(kernel.weights.nbytes)
    defines = {"MULT": kernel.multiplier, "VEC_IN": vec_in, "VEC_OUT": cout % 4 == 0,
               "X_VIEW": x_view, "W_VIEW": w_view, "KH": kernel.kh, "KW": kernel.kw,
               "STRIDE_H": strides[0], "STRIDE_W": strides[1], "DIL_H": dilation[0],
               "DIL_W": dilation[1], **act_defines}
    uniforms = {"in_h": h, "in_w": w, "cin": cin, "out_h": oh, "out_w": ow, "cout": cout,
                "cblocks": cblocks, "pad_top": top, "pad_left": left, **act_uniforms}
    tiles = depthwise_tiles(kernel, strides, dilation, oh)
    if tiles is not None:
        rows, cols = tiles.input_tile(strides, dilation, kernel.kh, kernel.kw)
        tiles_h, tiles_w, cgroups = math.ceil(oh / tiles.h), math.ceil(ow / tiles.w), \
            math.ceil(cblocks / tiles.c)
        n_groups = n * cgroups * tiles_h * tiles_w
        defines.update(TILED=True, LOCAL_SIZE=tiles.invocations, TILE_H=tiles.h, TILE_W=tiles.w,
                       TILE_C=tiles.c, TPIX=tiles.pix, IN_TH=rows, IN_TW=cols,
                       TSPAN=(tiles.pix - 1) * strides[1] + (kernel.kw - 1) * dilation[1] + 1)
        uniforms.update(tiles_h=tiles_h, tiles_w=tiles_w, cgroups=cgroups, n_groups=n_groups)
        groups = dispatch.groups_for(n_groups, 1)
    else:
        pix = choose_row_tile(ow, n * oh * cblocks, strides[1],
                              effective_size(kernel.kw, dilation[1]))
        row_tiles = math.ceil(ow / pix)
        n_work = n * oh * row_tiles * cblocks
        span = (pix - 1) * strides[1] + (kernel.kw - 1) * dilation[1] + 1
        lanes = local_size()
        defines.update(TILED=False, LOCAL_SIZE=lanes, PIX=pix, SPAN=span)
        uniforms.update(row_tiles=row_tiles, n_work=n_work)
        groups = dispatch.groups_for(n_work, lanes)
    taps = kernel.kh * kernel.kw
    storage_ops.run_in_place("depthwise_conv2d.comp", reads={0: "X"}, writes={3: "Y"},
                 defines=defines,
                 buffers=[x, kernel.weights, kernel.bias, out], uniforms=uniforms,
                 views=([(0, x)] if x_view else []) + ([(1, kernel.weights)] if w_view else []),
                 groups=groups,
                 work=(2 * out.size * taps, work.nbytes(x, out) + 4 * (taps + 1) * cout))
    return out
