"""3D convolutions, channels-last: Conv3D (groups, dilation, strides) and transposed (Conv3DTranspose).

The 2D machinery of ops/conv.py, one axis deeper: the same weight packing (a [kd, kh, kw, cin, cout]
kernel is packed as a 2D one of height kd * kh, which gives exactly the [kd][kh][kw] order
shaders/conv3d.comp reads), the same tile choice, the same Keras padding rules per axis. A
transposed convolution is a convolution over the input seen with (stride - 1) zeros between its
samples, the kernel flipped and its in/out swapped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .conv import LINEAR, ConvKernel, local_size, choose_pix, effective_size, pack_conv
from .storage_ops import any_storage


@dataclass(frozen=True)
class Conv3DKernel:
    """A 3D kernel packed for shaders/conv3d.comp: `packed` is the 2D packing of the kernel seen
    as [kd * kh, kw, cin_pg, cout], which holds weights, bias, groups and channel blocks."""
    packed: ConvKernel
    kd: int
    kh: int
    kw: int
    input_dilation: tuple = (1, 1, 1)   # > 1: a transposed convolution with these strides

    def dispose(self) -> None:
        self.packed.dispose()


def pack_conv3d(kernel: np.ndarray, bias: np.ndarray | None, groups: int, upload: Callable,
                input_dilation: tuple = (1, 1, 1)) -> Conv3DKernel:
    """Pack a Keras Conv3D kernel [kd, kh, kw, cin_pg, cout] and bias. `upload(array) -> Tensor`
    puts an array on the GPU (a layer's `upload`, which owns it)."""
    kernel = np.asarray(kernel, dtype=np.float32)
    if kernel.ndim != 5:
        raise ShapeError(f"pack_conv3d expects a kernel [kd, kh, kw, cin, cout]. Received shape "
                         f"{list(kernel.shape)}.")
    kd, kh, kw, cin_pg, cout = kernel.shape
    # conv3d.comp reads the packed layout only (never the implicit GEMM's matrix).
    packed = pack_conv(kernel.reshape(kd * kh, kw, cin_pg, cout), bias, groups, upload, matrix=False)
    return Conv3DKernel(packed, kd, kh, kw, tuple(int(s) for s in input_dilation))


def pack_conv3d_transpose(kernel: np.ndarray, bias: np.ndarray | None, strides: tuple,
                          upload: Callable) -> Conv3DKernel:
    """Pack a Keras Conv3DTranspose kernel [kd, kh, kw, cout, cin] as the equivalent convolution's:
    flipped in space, in and out swapped."""
    kernel = np.asarray(kernel, dtype=np.float32)
    if kernel.ndim != 5:
        raise ShapeError(f"pack_conv3d_transpose expects a kernel [kd, kh, kw, cout, cin]. Received "
                         f"shape {list(kernel.shape)}.")
    flipped = kernel[::-1, ::-1, ::-1].transpose(0, 1, 2, 4, 3)
    return pack_conv3d(flipped, bias, 1, upload, input_dilation=strides)


@any_storage
def conv3d(x: Tensor, kernel: Conv3DKernel, strides=(1, 1, 1), dilation=(1, 1, 1),
           padding=((0, 0), (0, 0), (0, 0)), activation=LINEAR, out_dhw=None) -> Tensor:
    """y[n, oz, oy, ox, :] = act(bias + sum over kd, kh, kw, cin of x * w), x of shape
    [n, d, h, w, cin]. `padding` is ((front, back), (top, bottom), (left, right)) in input voxels
    (of the zero-dilated input for a transposed convolution); out_dhw, when given, overrides the
    computed output size."""
    x._check_alive()
    if x.ndim != 5:
        raise ShapeError(f"conv3d expects a 5D input [batch, depth, height, width, channels]. "
                         f"Received shape {list(x.shape)}.")
    packed = kernel.packed
    n, d, h, w, cin = x.shape
    if cin != packed.cin_pg * packed.groups:
        raise ShapeError(f"conv3d: the kernel expects {packed.cin_pg * packed.groups} input channels. "
                         f"Received input shape {list(x.shape)}.")
    sizes = (kernel.kd, kernel.kh, kernel.kw)
    if out_dhw is None:
        out_dhw = tuple((
            (size - 1) * idil + 1 + before + after - effective_size(k, dil)) // stride + 1
            for size, idil, (before, after), k, dil, stride
            in zip((d, h, w), kernel.input_dilation, padding, sizes, dilation, strides))
    od, oh, ow = out_dhw
    if od <= 0 or oh <= 0 or ow <= 0:
        raise ShapeError(f"conv3d: a {'x'.join(map(str, sizes))} kernel (dilation {list(dilation)}) "
                         f"does not fit input shape {list(x.shape)}; the output would be "
                         f"{[n, od, oh, ow, packed.cout]}.")
    out = empty((n, od, oh, ow, packed.cout))
    if out.size == 0:
        return out
    n_voxels = n * od * oh * ow
    blocks = packed.groups * packed.blocks_pg
    pix = choose_pix(n_voxels, blocks)
    n_work = math.ceil(n_voxels / pix) * blocks
    lanes = local_size()
    sd, sh, sw = kernel.input_dilation
    defines = {
        "LOCAL_SIZE": lanes, "PIX": pix, "COUT_VEC": packed.cout_vec,
        "CIN_VEC4": packed.cin_pg % 4 == 0 and cin % 4 == 0,
        "VEC_OUT": packed.cout_pg % 4 == 0,
        "KD": kernel.kd, "KH": kernel.kh, "KW": kernel.kw,
        "STRIDE_D": strides[0], "STRIDE_H": strides[1], "STRIDE_W": strides[2],
        "DIL_D": dilation[0], "DIL_H": dilation[1], "DIL_W": dilation[2],
        "INPUT_DIL_D": sd, "INPUT_DIL_H": sh, "INPUT_DIL_W": sw,
        "ACT": activation.function,
    }
    uniforms = {"in_d": d, "in_h": h, "in_w": w, "cin": cin, "out_d": od, "out_h": oh, "out_w": ow,
                "cout": packed.cout, "cin_pg": packed.cin_pg, "cout_pg": packed.cout_pg,
                "blocks_pg": packed.blocks_pg, "pad_front": padding[0][0], "pad_top": padding[1][0],
                "pad_left": padding[2][0], "n_voxels": n_voxels, "n_blocks": blocks,
                "n_work": n_work,
                **{f"act_p{i}": float(v) for i, v in enumerate(activation.params)}}
    dispatch.run("conv3d.comp", defines=defines, buffers=[x, packed.weights, packed.bias, out],
                 uniforms=uniforms, groups=dispatch.groups_for(n_work, lanes))
    return out
