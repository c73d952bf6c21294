"""Convolutions whose kernel is a tensor (keras.ops.conv / depthwise_conv / conv_transpose in a
graph, with a kernel computed there or given as a constant operand): shaders/conv_general.comp,
one output element per invocation, reading the kernel in Keras's own layout (no packing). 1, 2
or 3 spatial axes, channels_last; strides, dilation, "valid" / "same" padding, groups.
"""
from __future__ import annotations

import math

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty
from . import dispatch
from .conv import conv_padding, conv_transpose_padding
from .storage_ops import any_storage


def per_axis(value, rank: int, what: str) -> tuple[int, ...]:
    """An int or a sequence of `rank` ints, as a tuple."""
    values = (value,) * rank if isinstance(value, int) else tuple(int(v) for v in value)
    if len(values) != rank or min(values) < 1:
        raise ShapeError(f"{what} {value!r} does not fit {rank} spatial axes.")
    return values


def _check(x, kernel, rank_extra=2):
    for t, what in ((x, "input"), (kernel, "kernel")):
        if not isinstance(t, Tensor):
            raise TypeError(f"conv ops take kerasgl Tensors; the {what} is a {type(t).__name__}.")
        t._check_alive()
    r = x.ndim - 2
    if not 1 <= r <= 3 or kernel.ndim != r + rank_extra:
        raise ShapeError(f"conv: input of shape {list(x.shape)} and kernel of shape "
                         f"{list(kernel.shape)} do not make a 1D, 2D or 3D convolution.")
    return r


def _pad3(values, fill):
    return (fill,) * (3 - len(values)) + tuple(values)


def _run(x, kernel, out_spatial, CO, pads, strides, dilation, lhs, cin_pg, cout_pg,
         ci_stride, co_stride, flip):
    r = x.ndim - 2
    ksize = kernel.shape[:r]
    tail = math.prod(kernel.shape[r:])
    taps = [math.prod(ksize[a + 1:]) * tail for a in range(r)]
    out = empty((x.shape[0],) + tuple(out_spatial) + (CO,))
    if out.size == 0:
        return out
    dispatch.run("conv_general.comp", buffers=[x, kernel, out],
                 uniforms={"n": out.size, "in_size": _pad3(x.shape[1:-1], 1), "C": x.shape[-1],
                           "out_size": _pad3(out_spatial, 1), "CO": CO,
                           "ksize": _pad3(ksize, 1), "stride": _pad3(strides, 1),
                           "dil": _pad3(dilation, 1), "lhs": _pad3(lhs, 1),
                           "pad": _pad3(pads, 0), "ks": _pad3(taps, 0),
                           "ci_stride": ci_stride, "co_stride": co_stride, "cin_pg": cin_pg,
                           "cout_pg": cout_pg, "flip": int(flip)},
                 groups=dispatch.groups_for(out.size))
    return out


def conv_geometry(in_spatial, ksize, strides, dilation, padding):
    """(output sizes, pads before) of a convolution."""
    geo = [conv_padding(n, k, s, d, padding)
           for n, k, s, d in zip(in_spatial, ksize, strides, dilation)]
    return tuple(g[0] for g in geo), tuple(g[1] for g in geo)


def transpose_geometry(in_spatial, ksize, strides, dilation, padding, output_padding):
    r = len(in_spatial)
    op = (output_padding,) * r if output_padding is None or isinstance(output_padding, int) \
        else tuple(output_padding)
    geo = [conv_transpose_padding(n, k, s, d, padding, p)
           for n, k, s, d, p in zip(in_spatial, ksize, strides, dilation, op)]
    return tuple(g[0] for g in geo), tuple(g[1] for g in geo)


@any_storage
def conv(x: Tensor, kernel: Tensor, strides=1, padding="valid", dilation=1) -> Tensor:
    """keras.ops.conv: kernel [*k, cin / groups, cout], groups = cin / the kernel's cin."""
    r = _check(x, kernel)
    strides, dilation = per_axis(strides, r, "strides"), per_axis(dilation, r, "dilation_rate")
    cin, (cin_pg, cout) = x.shape[-1], kernel.shape[-2:]
    if cin_pg == 0 or cin % cin_pg or cout % (cin // cin_pg):
        raise ShapeError(f"conv: kernel of shape {list(kernel.shape)} does not fit {cin} input "
                         "channels.")
    groups = cin // cin_pg
    out_spatial, pads = conv_geometry(x.shape[1:-1], kernel.shape[:r], strides, dilation, padding)
    return _run(x, kernel, out_spatial, cout, pads, strides, dilation, (1,) * r, cin_pg,
                cout // groups, cout, 1, False)


@any_storage
def depthwise_conv(x: Tensor, kernel: Tensor, strides=1, padding="valid", dilation=1) -> Tensor:
    """keras.ops.depthwise_conv: kernel [*k, cin, multiplier]."""
    r = _check(x, kernel)
    strides, dilation = per_axis(strides, r, "strides"), per_axis(dilation, r, "dilation_rate")
    cin, mult = kernel.shape[-2:]
    if cin != x.shape[-1]:
        raise ShapeError(f"depthwise_conv: kernel of shape {list(kernel.shape)} does not fit "
                         f"{x.shape[-1]} input channels.")
    out_spatial, pads = conv_geometry(x.shape[1:-1], kernel.shape[:r], strides, dilation, padding)
    return _run(x, kernel, out_spatial, cin * mult, pads, strides, dilation, (1,) * r, 1, mult,
                0, 1, False)


@any_storage
def conv_transpose(x: Tensor, kernel: Tensor, strides=1, padding="valid", output_padding=None,
                   dilation=1) -> Tensor:
    """keras.ops.conv_transpose: kernel [*k, cout, cin], as the stride-1 convolution of the
    zero-dilated input with the flipped kernel (Keras 3's padding rule, ops/conv.py)."""
    r = _check(x, kernel)
    strides, dilation = per_axis(strides, r, "strides"), per_axis(dilation, r, "dilation_rate")
    cout, cin = kernel.shape[-2:]
    if cin != x.shape[-1]:
        raise ShapeError(f"conv_transpose: kernel of shape {list(kernel.shape)} does not fit "
                         f"{x.shape[-1]} input channels.")
    out_spatial, pads = transpose_geometry(x.shape[1:-1], kernel.shape[:r], strides, dilation,
                                           padding, output_padding)
    return _run(x, kernel, out_spatial, cout, pads, (1,) * r, dilation, strides, cin, cout,
                1, cin, True)
