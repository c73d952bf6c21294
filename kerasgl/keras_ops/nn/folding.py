"""keras.ops.unfold (im2col) and keras.ops.fold (col2im) on NCHW tensors, as Keras 3 defines them
(torch's nn.Unfold / nn.Fold): unfold's channel c*kH*kW + i*kW + j holds the input at kernel
offset (i, j) of channel c for each of the L output positions (row-major); fold sums those
blocks back into the image (overlaps add up). Run as a depthwise convolution / a transposed
convolution with a 0 / 1 kernel (ops/conv_general.py), uploaded once per channel count.
"""
from __future__ import annotations

import numpy as np

from ...ops import conv_general, layout, spatial
from ...tensors import ownership
from ..node import OpNode, _shape, register_op


def _pair(layer, value, what):
    values = (value, value) if isinstance(value, int) else tuple(value)
    if len(values) != 2 or not all(isinstance(v, int) for v in values):
        raise layer.unsupported(f"{what}={value!r} (an int or a pair of ints is needed)")
    return values


class _FoldingOp(OpNode):
    input_dtypes = ("float32",)
    shaders = ("transpose.comp", "conv_general.comp", "pad_crop2d.comp")

    def geometry(self):
        o = self.options
        k = _pair(self, o.get("kernel_size"), "kernel_size")
        d = _pair(self, o.get("dilation", 1), "dilation")
        p = _pair(self, o.get("padding", 0), "padding")
        s = _pair(self, o.get("stride", 1), "stride")
        if min(k + d + s) < 1 or min(p) < 0:
            raise self.unsupported(f"kernel_size={k}, dilation={d}, padding={p}, stride={s}")
        return k, d, p, s

    def kernel(self, channels: int, shape, hot):
        """The 0 / 1 kernel for `channels` channels, uploaded on first use."""
        cache = self.__dict__.setdefault("_kernels", {})
        if channels not in cache:
            w = np.zeros(shape, np.float32)
            for index in np.ndindex(*shape):
                w[index] = float(hot(*index))
            cache[channels] = self.upload(w, name=f"kernel{len(cache)}")
        return cache[channels]


def _spatial_out(size, k, d, p, s):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


@register_op("Unfold")
class UnfoldOp(_FoldingOp):
    """unfold(x (N, C, H, W)) -> (N, C*kH*kW, L): the sliding blocks of the zero-padded image."""

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        if len(shape) != 4 or None in shape[1:]:
            raise self.unsupported(f"an input of shape {list(shape)} (unfold takes (N, C, H, W) "
                                   "with C, H and W known)")
        (kh, kw), (dh, dw), (ph, pw), (sh, sw) = self.geometry()
        n, c, h, w = shape
        oh, ow = _spatial_out(h, kh, dh, ph, sh), _spatial_out(w, kw, dw, pw, sw)
        if oh < 1 or ow < 1:
            raise self.shape_error(f"the kernel does not fit the input of shape {list(shape)}.")
        return (n, c * kh * kw, oh * ow)

    def run(self, bound):
        x = bound["x"]
        (kh, kw), d, (ph, pw), s = self.geometry()
        n, c = x.shape[:2]
        kernel = self.kernel(c, (kh, kw, c, kh * kw), lambda i, j, ch, m: m == i * kw + j)

        def compute():
            image = layout.transpose(x, (0, 2, 3, 1))
            if ph or pw:
                image = spatial.pad_crop2d(image, (ph, ph), (pw, pw))
            blocks = conv_general.depthwise_conv(image, kernel, strides=s, padding="valid",
                                                 dilation=d)
            return layout.transpose(layout.reshape(blocks, (n, -1, c * kh * kw)), (0, 2, 1))
        return ownership.tidy.run(compute)


@register_op("Fold")
class FoldOp(_FoldingOp):
    """fold(x (N, C*kH*kW, L), output_size) -> (N, C, oH, oW): each block added back at its
    place in the zero-padded image, the padding then cut off."""

    def sizes(self, shape):
        (kh, kw), (dh, dw), (ph, pw), (sh, sw) = self.geometry()
        oh, ow = _pair(self, self.options.get("output_size"), "output_size")
        if len(shape) != 3 or None in shape[1:]:
            raise self.unsupported(f"an input of shape {list(shape)} (fold takes (N, C*kH*kW, "
                                   "L) with both known)")
        ckk, blocks = shape[1:]
        nh, nw = _spatial_out(oh, kh, dh, ph, sh), _spatial_out(ow, kw, dw, pw, sw)
        if ckk % (kh * kw) or nh < 1 or nw < 1 or nh * nw != blocks:
            raise self.shape_error(f"an input of shape {list(shape)} does not fold to "
                                   f"{(oh, ow)} with kernel {(kh, kw)}.")
        return ckk // (kh * kw), (oh, ow), (nh, nw)

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        c, out, _ = self.sizes(shape)
        return (shape[0], c) + out

    def run(self, bound):
        x = bound["x"]
        c, (oh, ow), (nh, nw) = self.sizes(x.shape)
        (kh, kw), d, (ph, pw), s = self.geometry()
        k = kh * kw
        kernel = self.kernel(c, (kh, kw, c, c * k), lambda i, j, ch, m: m == ch * k + i * kw + j)

        def compute():
            grid = layout.reshape(x, (x.shape[0], c * k, nh, nw))
            image = layout.transpose(grid, (0, 2, 3, 1))
            summed = conv_general.conv_transpose(image, kernel, strides=s, padding="valid",
                                                 dilation=d)
            full_h, full_w = summed.shape[1:3]
            cropped = spatial.pad_crop2d(summed, (-ph, oh + ph - full_h), (-pw, ow + pw - full_w))
            return layout.transpose(cropped, (0, 3, 1, 2))
        return ownership.tidy.run(compute)
