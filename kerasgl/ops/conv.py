"""Convolutions, channels-last: Conv1D/Conv2D (groups, dilation, strides), depthwise, transposed.

Weights are packed once (pack_conv / pack_depthwise / pack_conv_transpose, called by layers at build
time) into the vec4 layouts the shaders read; `conv2d` / `depthwise_conv2d` then only dispatch.
A Conv1D is a Conv2D over one row; a transposed convolution is a convolution over the input seen
with (stride - 1) zeros between its samples, with the kernel flipped and its in/out swapped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import context, ownership, tuning
from ..errors import ShapeError
from ..tensor import Tensor, empty
from . import dispatch
from .storage_ops import any_storage

LOCAL_SIZE = 16             # lanes per work group: llvmpipe hands whole groups to its threads, so
                            # more, smaller groups balance better (ResNet50 planned predict,
                            # 4 interleaved pairs: best run 229-236 ms vs 244-248 with 32)
IMAGE_WIDTH_LOG2 = 12          # texels per row of the RGBA32F images kernels read (4096)
GL_RGBA32F = 0x8814


@dataclass(frozen=True)
class Pointwise:
    """Duck type of kerasgl.layers.activations.Pointwise: ops take any object with these fields."""
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
        return (0.0, float(params[0]) if params[0] >= 0 else math.inf)
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
def image_rows(n_vec4: int) -> int | None:
    """Rows of the RGBA32F image holding n vec4s, None where it would not fit this GPU."""
    rows = max(1, math.ceil(n_vec4 / (1 << IMAGE_WIDTH_LOG2)))
    limit = context.limits().max_texture_size
    return rows if rows <= limit and (1 << IMAGE_WIDTH_LOG2) <= limit else None


def rgba_image(values: np.ndarray) -> Tensor:
    """A tensor of shape [rows, 4096, 4] in an RGBA32F texture holding `values` (float32, a
    multiple of 4 long) as vec4 texels, row by row, zero-filled at the end; kernels read it with
    imageLoad. Made here (not by tensor.empty, whose textures hold one float per texel) and
    registered with ownership like every GL object, so it is freed and counted the same way.
    Only for weights packed at load: plans recreate intermediate textures with one channel."""
    flat = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
    width = 1 << IMAGE_WIDTH_LOG2
    rows = image_rows(flat.size // 4)
    data = np.zeros(rows * width * 4, np.float32)
    data[:flat.size] = flat
    handle = context.get_context().texture((width, rows), 4, data=data.tobytes(), dtype="f4")
    handle.filter = (0x2600, 0x2600)    # GL_NEAREST
    gl = ownership.GLObject("texture", handle, data.nbytes, "conv weights image")
    return Tensor(ownership.Storage(gl), (rows, width, 4), "float32")


# Staging images for convolution inputs, shared by every convolution of the context: (context id,
# rows) -> GLObject. Dispatches run in order with a barrier after each, so one image can serve
# every convolution in turn. Rows are powers of two (few sizes); the images live as long as the
# context (like compiled programs), so execution plans that bind them stay valid.
_staging: dict[tuple[int, str, int], ownership.GLObject] = {}


def staging_image(n_vec4: int, purpose: str = "input"):
    """An RGBA32F image (moderngl texture) with room for n vec4s, None where none would fit;
    one per purpose (an input and the weights matmul packs per call are used together)."""
    rows = image_rows(n_vec4)
    if rows is None:
        return None
    rows = 1 << (rows - 1).bit_length()
    if rows > context.limits().max_texture_size:
        return None
    ctx = context.get_context()
    key = (id(ctx), purpose, rows)
    gl = _staging.get(key)
    if gl is None or not gl.alive:
        handle = ctx.texture((1 << IMAGE_WIDTH_LOG2, rows), 4, dtype="f4")
        handle.filter = (0x2600, 0x2600)    # GL_NEAREST
        gl = _staging[key] = ownership.GLObject("texture", handle,
                                                (1 << IMAGE_WIDTH_LOG2) * rows * 16,
                                                f"conv {purpose} staging image")
    return gl.handle


def stage_input(x: Tensor):
    """x (a buffer of vec4s) copied into a shared staging image; the image's moderngl texture.
    None while an execution plan records the call: plan.py refuses a call that writes a GL object
    made before it (it takes that for state kept on the GPU), and it recreates textures made
    during it with one channel; planned predicts read the input from its buffer (same values,
    same sums: the results are bit-identical either way)."""
    if ownership.active_recorder() is not None:
        return None
    image = staging_image(x.size // 4)
    if image is None:
        return None
    n_vec4 = x.size // 4
    dispatch.run("conv2d_stage_input.comp", defines={"IMAGE_WIDTH_LOG2": IMAGE_WIDTH_LOG2},
                 buffers=[x], images=[(0, image, False, True, GL_RGBA32F)],
                 uniforms={"n_vec4": n_vec4}, groups=dispatch.groups_for(n_vec4))
    return image


# Stage the input only where the convolution reads each input value at least this many times
# (output-channel blocks x kernel taps / stride^2): below, the copy costs about what it saves
# (1x1 28x28x512->128, reuse 4: 49 GFLOP/s without staging, 38 with; CPU-time based).
STAGE_MIN_REUSE = 8
SCALAR_PIX = 8


@dataclass(frozen=True)
class ConvKernel:
    """A convolution kernel packed for shaders/conv2d.comp, with its bias, on the GPU."""
    weights: Tensor          # [groups][blocks][kh][kw][cin_pg][cout_vec] vec4 (a buffer, or an
                             # RGBA32F image of vec4 texels when weights_image)
    bias: Tensor             # [groups][blocks][cout_vec] vec4
    kh: int
    kw: int
    cin_pg: int
    cout: int
    groups: int
    cout_vec: int
    input_dilation: tuple = (1, 1)  # > 1: a transposed convolution with these strides
    weights_image: bool = False
    texture: object = None   # a moderngl texture holding the weights instead of `weights`
                             # (matmul packs B per call into a staging image)

    @property
    def cout_pg(self) -> int:
        return self.cout // self.groups

    @property
    def blocks_pg(self) -> int:
        return math.ceil(self.cout_pg / (4 * self.cout_vec))

    def dispose(self) -> None:
        self.weights.dispose()
        self.bias.dispose()


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
              input_dilation: tuple = (1, 1), upload_image: Callable | None = None) -> ConvKernel:
    """Pack a Keras Conv2D kernel [kh, kw, cin_pg, cout] (Conv1D: [k, cin_pg, cout]) and bias.
    `upload(array) -> Tensor` puts an array on the GPU (a layer's `upload`, which owns it);
    `upload_image(array) -> Tensor`, where given, puts it in an RGBA32F image instead (see
    rgba_image), used where the device's tuning prefers image loads (kerasgl/tuning.py)."""
    kernel = np.asarray(kernel, dtype=np.float32)
    if kernel.ndim == 3:
        kernel = kernel[None]
    kh, kw, cin_pg, cout = kernel.shape
    if cout % groups:
        raise ShapeError(f"A grouped convolution needs filters ({cout}) divisible by groups ({groups}).")
    cout_pg = cout // groups
    cout_vec = choose_cout_vec(cout_pg)
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
    w = np.ascontiguousarray(w).reshape(-1)
    as_image = (upload_image is not None and tuning.current().conv_weights_image
                and image_rows(w.size // 4) is not None)
    weights = upload_image(w) if as_image else upload(w)
    return ConvKernel(weights, upload(b.reshape(-1)), kh, kw, cin_pg, cout, groups, cout_vec,
                      tuple(input_dilation), as_image)


def pack_conv_transpose(kernel: np.ndarray, bias: np.ndarray | None, stride_hw: tuple[int, int],
                        upload: Callable, upload_image: Callable | None = None) -> ConvKernel:
    """Pack a Keras Conv2DTranspose kernel [kh, kw, cout, cin] as the equivalent convolution's:
    flipped in space, in and out swapped (1D: [k, cout, cin])."""
    kernel = np.asarray(kernel, dtype=np.float32)
    if kernel.ndim == 3:
        kernel = kernel[None]
    flipped = kernel[::-1, ::-1].transpose(0, 1, 3, 2)
    return pack_conv(flipped, bias, 1, upload, input_dilation=tuple(stride_hw),
                     upload_image=upload_image)


def choose_pix(n_pixels: int, blocks: int) -> int:
    """Output pixels per invocation. llvmpipe gathers every SSBO load lane by lane, so the kernel
    is bound by loads: a tile of PIX pixels x 4*COUT_VEC channels does 16*PIX*COUT_VEC
    multiply-adds per PIX + 4*COUT_VEC vec4 loads. Measured on 56x56x64->64 3x3: 4x16 tiles
    8 GFLOP/s, 8x32 27, 16x32 28-34, 32x32 17-21 (spills). Smaller tiles where the last tile of
    pixels would be mostly padding, or where fewer than two work groups would be left (one per
    CPU thread: asking for four made the small CNN's 11x11x32->64 conv use 2-pixel tiles, and
    its predict 0.95 ms where two groups of 4-pixel tiles take 0.83)."""
    most = tuning.current().conv_pix
    for pix in (16, 8, 4, 2):
        tiles = math.ceil(n_pixels / pix)
        if pix <= most and tiles * pix <= 1.15 * n_pixels and tiles * blocks > LOCAL_SIZE:
            return pix
    return 1


@any_storage
def conv2d(x: Tensor, kernel: ConvKernel, strides=(1, 1), dilation=(1, 1),
           padding=((0, 0), (0, 0)), activation=LINEAR, out_hw=None) -> Tensor:
    """y[n, oy, ox, :] = act(bias + sum over kh, kw, cin of x * w), x of shape [n, h, w, cin].
    `padding` is ((top, bottom), (left, right)) in input pixels (of the dilated input for a
    transposed convolution); out_hw, when given, overrides the computed output size."""
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
    out = empty((n, oh, ow, kernel.cout))
    if out.size == 0:
        return out
    n_pixels = n * oh * ow
    blocks = kernel.groups * kernel.blocks_pg
    cin_vec4 = kernel.cin_pg % 4 == 0 and cin % 4 == 0
    pix = choose_pix(n_pixels, blocks)
    if not cin_vec4:
        # Scalar-input layers (mostly an RGB stem, once per model) get their own variant: a
        # smaller tile halves its cold JIT compile at little cost to one layer.
        pix = min(pix, SCALAR_PIX)
    n_work = math.ceil(n_pixels / pix) * blocks
    reuse = blocks * kernel.kh * kernel.kw / (strides[0] * strides[1] * sh * sw)
    staged = None
    if cin_vec4 and reuse >= STAGE_MIN_REUSE and tuning.current().conv_input_image:
        staged = stage_input(x)
    act_defines, act_uniforms = activation_settings(activation)
    defines = {
        "LOCAL_SIZE": LOCAL_SIZE, "PIX": pix, "COUT_VEC": kernel.cout_vec,
        "CIN_VEC4": cin_vec4,
        "VEC_OUT": kernel.cout_pg % 4 == 0,
        "INPUT_DIL_H": sh, "INPUT_DIL_W": sw,
        **act_defines,
        "W_IMAGE": kernel.weights_image, "X_IMAGE": staged is not None,
        "IMAGE_WIDTH_LOG2": IMAGE_WIDTH_LOG2,
    }
    uniforms = {"in_h": h, "in_w": w, "cin": cin, "out_h": oh, "out_w": ow, "cout": kernel.cout,
                "cin_pg": kernel.cin_pg, "cout_pg": kernel.cout_pg, "blocks_pg": kernel.blocks_pg,
                "pad_top": top, "pad_left": left, "n_pixels": n_pixels,
                "kernel_h": kernel.kh, "kernel_w": kernel.kw, "stride_h": strides[0],
                "stride_w": strides[1], "dil_h": dilation[0], "dil_w": dilation[1],
                "n_blocks": blocks, "n_work": n_work, **act_uniforms}
    images = []
    if staged is not None:
        images.append((0, staged, True, False, GL_RGBA32F))
    if kernel.weights_image:
        # Binding 1 is then unused; the input stands in for it (GL wants a buffer bound).
        texture = kernel.texture if kernel.texture is not None else kernel.weights.gl_texture()
        images.append((1, texture, True, False, GL_RGBA32F))
    weights = x if kernel.weights_image else kernel.weights
    dispatch.run("conv2d.comp", defines=defines, buffers=[x, weights, kernel.bias, out],
                 images=images, uniforms=uniforms, groups=dispatch.groups_for(n_work, LOCAL_SIZE))
    return out


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
    return DepthwiseKernel(upload(w.reshape(-1)), upload(b), kh, kw, cin, mult)


def choose_row_tile(out_w: int, rows_x_blocks: int, stride: int, kernel_span: int) -> int:
    """Adjacent output pixels per depthwise invocation: they share input columns, so wider tiles
    load less per output (112x112x32 3x3: 1 pixel 1.0 GFLOP/s, 8 pixels 2.7, 16 pixels 4.7);
    narrower where the columns kept would spill (stride 2: 16 pixels slower than 8), where a row's
    last tile would be mostly padding, or where too few invocations would be left for the CPU
    threads' SIMD lanes."""
    for pix in (16, 8, 4, 2):
        if (pix - 1) * stride + kernel_span > 20:
            continue
        tiles = math.ceil(out_w / pix)
        if tiles * pix <= 1.15 * out_w and tiles * rows_x_blocks >= 2 * LOCAL_SIZE:
            return pix
    return 1


@any_storage
def depthwise_conv2d(x: Tensor, kernel: DepthwiseKernel, strides=(1, 1), dilation=(1, 1),
                     padding=((0, 0), (0, 0)), activation=LINEAR) -> Tensor:
    """Depthwise convolution of x [n, h, w, cin]: y[..., c * mult + m] = act(bias + sum x[..., c] * w)."""
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
    out = empty((n, oh, ow, cout))
    if out.size == 0:
        return out
    cblocks = math.ceil(cout / 4)
    pix = choose_row_tile(ow, n * oh * cblocks, strides[1], effective_size(kernel.kw, dilation[1]))
    row_tiles = math.ceil(ow / pix)
    n_work = n * oh * row_tiles * cblocks
    span = (pix - 1) * strides[1] + (kernel.kw - 1) * dilation[1] + 1
    act_defines, act_uniforms = activation_settings(activation)
    defines = {"LOCAL_SIZE": LOCAL_SIZE, "PIX": pix, "SPAN": span, "MULT": kernel.multiplier,
               "VEC_IN": kernel.multiplier == 1 and cin % 4 == 0, "VEC_OUT": cout % 4 == 0,
               "KH": kernel.kh, "KW": kernel.kw, "STRIDE_H": strides[0], "STRIDE_W": strides[1],
               "DIL_H": dilation[0], "DIL_W": dilation[1], **act_defines}
    uniforms = {"in_h": h, "in_w": w, "cin": cin, "out_h": oh, "out_w": ow, "cout": cout,
                "cblocks": cblocks, "row_tiles": row_tiles, "pad_top": top, "pad_left": left,
                "n_work": n_work, **act_uniforms}
    dispatch.run("depthwise_conv2d.comp", defines=defines,
                 buffers=[x, kernel.weights, kernel.bias, out], uniforms=uniforms,
                 groups=dispatch.groups_for(n_work, LOCAL_SIZE))
    return out
