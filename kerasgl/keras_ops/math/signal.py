"""keras.ops signal operations recorded in Keras 3 graphs: extract_sequences, stft, istft, rfft,
irfft, fft, fft2 and ifft2. Keras gives complex values as (real, imag) pairs of float32 tensors,
and so do these nodes: kerasgl has no complex dtype and needs none.

Each transform is a matrix product over the last axis with a DFT matrix computed in float64 at
load (from integer phases k * n mod N) and uploaded as float32: exact up to the float32 sums, as
Keras's float32 FFT is. The matrices depend on the transformed axes' sizes, which must therefore
be known at load; an axis of unknown size there is refused.
"""
from __future__ import annotations

import numpy as np

from ...layers.preprocessing.audio import (StridedDft, check_matrix, check_reflect, dft_kernel,
                                           halves, stft_window)
from ...layers.refusals import refuse_ops
from ...ops import elementwise, layout, matmul, merge, tile_repeat_pad
from ...ops.framing import frame_count, frames
from ...ops.slicing import strided_slice
from ...tensors import ownership
from ..node import OpNode, _shape, register_op

refuse_ops({
    "ViewAsComplex": "it makes a complex tensor, a dtype kerasgl tensors do not have (the FFT "
                     "operations take and give (real, imag) pairs instead)",
    "ViewAsReal": "its argument is a complex tensor, a dtype kerasgl tensors do not have",
})


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _SignalOp(OpNode):
    input_dtypes = ("float32",)
    drops_nan = True            # matrix products and convolutions may clamp with min / max

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self._matrices = {}

    def positive(self, bound, key, default=None):
        value = self.opt(bound, key, default)
        if not _is_int(value) or value < 1:
            raise self.unsupported(f"{key}={value!r} (a positive integer)")
        return value

    def matrix(self, key, shape, make):
        """A float32 matrix of `shape` on the GPU, made once per key (the sizes it depends on)."""
        check_matrix(self, *shape, "DFT matrix")
        if key not in self._matrices:
            self._matrices[key] = self.upload(make(), name=f"dft{len(self._matrices)}")
        return self._matrices[key]

    def known(self, size, what):
        if size is None:
            raise self.unsupported(f"a {what} of unknown size at load (the DFT matrix depends on it)")
        return size


def _phase(rows, cols, n):
    return 2.0 * np.pi * ((np.arange(rows)[:, None] * np.arange(cols)[None, :]) % n) / n


def _pair(node, bound):
    """The (real, imag) pair argument's two parts (symbolic or tensors), of equal shapes."""
    x = bound["x"]
    if not isinstance(x, (list, tuple)) or len(x) != 2:
        raise node.unsupported("an argument that is not a (real, imag) pair of tensors")
    if tuple(getattr(x[0], "shape", ())) != tuple(getattr(x[1], "shape", ())):
        raise node.shape_error("the real and imaginary parts must have the same shape.")
    return x


def irfft_matrix(bins, n) -> np.ndarray:
    """[2 * bins, n] float64: [re, im] @ it = jnp.fft.irfft((re, im), n) over the last axis (bins
    past n // 2 + 1 dropped, the imaginary parts of frequency 0 and n / 2 unused)."""
    used = min(bins, n // 2 + 1)
    weight = np.full(used, 2.0)
    weight[0] = 1.0
    if n % 2 == 0 and used == n // 2 + 1:
        weight[-1] = 1.0
    phase = _phase(used, n, n)
    m = np.zeros((2 * bins, n))
    m[:used] = weight[:, None] * np.cos(phase) / n
    m[bins:bins + used] = -weight[:, None] * np.sin(phase) / n
    return m


def _split(y):
    """[re, im] from y [..., 2k]."""
    return list(halves(y))


@register_op("ExtractSequences")
class ExtractSequencesOp(OpNode):
    """Frames of sequence_length samples, sequence_stride apart, over the last axis (a copy)."""
    shaders = ("strided_slice.comp",)
    input_dtypes = ("float32", "int32")
    keeps_dtype = True

    def sizes(self, bound):
        length, stride = self.opt(bound, "sequence_length"), self.opt(bound, "sequence_stride")
        if not (_is_int(length) and _is_int(stride) and length >= 1 and stride >= 1):
            raise self.unsupported(f"sequence_length={length!r}, sequence_stride={stride!r}")
        return length, stride

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        length, stride = self.sizes(bound)
        if not shape:
            raise self.shape_error("the input must have rank >= 1.")
        count = None if shape[-1] is None else frame_count(shape[-1], length, stride)
        return shape[:-1] + (count, length)

    def run(self, bound):
        return frames(bound["x"], *self.sizes(bound))


@register_op("RFFT")
class RFFTOp(_SignalOp):
    """Real signal -> (real, imag) of its fft_length // 2 + 1 bins (cropped or zero-padded to
    fft_length samples, as jnp.fft.rfft)."""
    shaders = ("matmul.comp", "strided_slice.comp")

    def sizes(self, shape):
        length = self.known(shape[-1] if shape else None, "signal")
        n = self.options.get("fft_length") or length
        if not _is_int(n) or n < 1:
            raise self.unsupported(f"fft_length={n!r}")
        return length, n

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        length, n = self.sizes(shape)
        self.kernel(length, n)
        out = shape[:-1] + (n // 2 + 1,)
        return [out, out]

    def kernel(self, length, n):
        def make():
            rows = min(length, n)
            m = np.zeros((length, 2 * (n // 2 + 1)), np.float32)
            m[:rows] = dft_kernel(np.ones(rows), n)
            return m
        return self.matrix((length, n), (length, 2 * (n // 2 + 1)), make)

    def run(self, bound):
        x = bound["x"]
        kernel = self.kernel(*self.sizes(x.shape))
        return ownership.tidy.run(lambda: _split(matmul.matmul(x, kernel)))


@register_op("IRFFT")
class IRFFTOp(_SignalOp):
    """(real, imag) of bins -> the real signal of fft_length samples (default 2 * (bins - 1)),
    as jnp.fft.irfft: bins past fft_length // 2 + 1 are dropped, missing ones are zeros, and the
    imaginary parts of the zero (and Nyquist) frequency are ignored."""
    shaders = ("concat.comp", "matmul.comp")

    def sizes(self, shape):
        bins = self.known(shape[-1] if shape else None, "spectrum")
        n = self.options.get("fft_length") or 2 * (bins - 1)
        if not _is_int(n) or n < 1:
            raise self.unsupported(f"fft_length={n!r}")
        return bins, n

    def output_shape(self, bound):
        re, _ = _pair(self, bound)
        shape = _shape(re)
        bins, n = self.sizes(shape)
        self.kernel(bins, n)
        return shape[:-1] + (n,)

    def kernel(self, bins, n):
        return self.matrix((bins, n), (2 * bins, n),
                           lambda: irfft_matrix(bins, n).astype(np.float32))

    def run(self, bound):
        re, im = _pair(self, bound)
        kernel = self.kernel(*self.sizes(re.shape))
        return ownership.tidy.run(lambda: matmul.matmul(merge.concatenate([re, im], -1), kernel))


def _complex_dft(n, inverse):
    """[2n, 2n]: [re, im] @ it = [re, im] of the DFT (inverse: conjugate phases, over n)."""
    phase = _phase(n, n, n)
    c, s = np.cos(phase), np.sin(phase)
    if inverse:
        m = np.block([[c, s], [-s, c]]) / n
    else:
        m = np.block([[c, -s], [s, c]])
    return m.astype(np.float32)


@register_op("FFT", "FFT2", "IFFT2")
class FFTOp(_SignalOp):
    """(real, imag) -> (real, imag) of the DFT over the last axis (FFT) or the last two (FFT2,
    IFFT2 scaled by 1 / (rows * columns), as jnp.fft.ifft2): one axis at a time."""
    shaders = ("concat.comp", "matmul.comp", "strided_slice.comp", "transpose.comp")

    @property
    def axes(self):
        return 1 if self.class_name == "FFT" else 2

    def output_shape(self, bound):
        re, _ = _pair(self, bound)
        shape = _shape(re)
        if len(shape) < self.axes:
            raise self.shape_error(f"the input must have rank >= {self.axes}.")
        for n in shape[-self.axes:]:
            self.kernel(self.known(n, "transformed axis"))
        return [shape, shape]

    def kernel(self, n):
        inverse = self.class_name == "IFFT2"
        return self.matrix((n, inverse), (2 * n, 2 * n), lambda: _complex_dft(n, inverse))

    def _last_axis(self, re, im):
        return _split(matmul.matmul(merge.concatenate([re, im], -1), self.kernel(re.shape[-1])))

    def run(self, bound):
        re, im = _pair(self, bound)

        def compute():
            out = self._last_axis(re, im)
            if self.axes == 2:
                rank = re.ndim
                perm = tuple(range(rank - 2)) + (rank - 1, rank - 2)
                out = self._last_axis(*(layout.transpose(t, perm) for t in out))
                out = [layout.transpose(t, perm) for t in out]
            return out
        return ownership.tidy.run(compute)


class _StftOptions:
    """sequence_length, sequence_stride, fft_length, window, center of stft / istft."""

    def read(self, node, bound):
        length = node.positive(bound, "sequence_length")
        stride = node.positive(bound, "sequence_stride")
        fft = node.positive(bound, "fft_length")
        if fft < length:
            raise node.shape_error(f"fft_length={fft} must be at least sequence_length={length}.")
        center = node.opt(bound, "center", True)
        return length, stride, fft, node.opt(bound, "window", "hann"), bool(center)


@register_op("STFT")
class STFTOp(_SignalOp):
    """Signals [..., samples] -> (real, imag) [..., frames, fft_length // 2 + 1], centred with
    reflect padding unless center=False: one strided convolution with the windowed DFT kernel."""
    shaders = ("strided_slice.comp", "concat.comp", "conv2d.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.dft = None

    def output_shape(self, bound):
        length, stride, fft, window, center = _StftOptions().read(self, bound)
        shape = _shape(bound["x"])
        if not shape:
            raise self.shape_error("the input must have rank >= 1.")
        if center:
            check_reflect(self, shape[-1], fft // 2)
        if self.dft is None:
            check_matrix(self, fft, 2 * (fft // 2 + 1), "DFT kernel")
            kernel = dft_kernel(stft_window(self, window, length, fft), fft)
            self.dft = StridedDft(kernel, stride, self.upload, reflect=fft // 2 if center else 0)
        count = self.dft.frames(shape[-1])
        if count == 0:
            raise self.unsupported(f"a signal of {shape[-1]} samples, shorter than "
                                   f"fft_length={fft} with center=False (no whole frame)")
        out = shape[:-1] + (count, fft // 2 + 1)
        return [out, out]

    def run(self, bound):
        x = bound["x"]

        def compute():
            signals = layout.reshape(x, (-1, x.shape[-1]))
            y = self.dft(signals)
            return [layout.reshape(t, tuple(x.shape[:-1]) + t.shape[1:]) for t in _split(y)]
        return ownership.tidy.run(compute)


@register_op("ISTFT")
class ISTFTOp(_SignalOp):
    """(real, imag) [..., frames, bins] -> signals [..., samples], as keras.ops.istft on JAX: each
    frame's inverse DFT times the window (one matrix product: the window is in the matrix),
    overlap-added, divided by the overlap-added squared window where that exceeds 1e-10, then cut
    to `length` samples (centred: after fft_length // 2). The overlap-add sums ceil(fft_length /
    sequence_stride) shifted copies of the frames, each cut in blocks of sequence_stride samples."""
    shaders = ("concat.comp", "matmul.comp", "strided_slice.comp", "tile_repeat_pad.comp",
               "binary.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.kernel = None

    def geometry(self, bound, shape):
        length, stride, fft, window, center = _StftOptions().read(self, bound)
        if stride > fft:
            raise self.unsupported(f"sequence_stride={stride} above fft_length={fft}")
        if len(shape) < 2:
            raise self.shape_error("the input must have rank >= 2.")
        count = self.known(shape[-2], "frame axis")
        bins = self.known(shape[-1], "frequency axis")
        full = (count - 1) * stride + fft
        start = fft // 2 if center else 0
        wanted = self.opt(bound, "length")
        if wanted is not None and (not _is_int(wanted) or wanted < 0):
            raise self.unsupported(f"length={wanted!r} (a number of samples)")
        if wanted is not None:
            end = start + wanted
        else:
            end = full - fft // 2 if center else full
        kept = len(range(full)[start:end])
        return length, stride, fft, window, count, bins, start, kept

    def output_shape(self, bound):
        re, _ = _pair(self, bound)
        shape = _shape(re)
        length, stride, fft, window, count, bins, _, kept = self.geometry(bound, shape)
        if self.kernel is None:
            check_matrix(self, 2 * bins, fft + stride, "inverse DFT matrix")
            check_matrix(self, count + fft // stride, stride, "window norm")
            win = stft_window(self, window, length, fft)
            factor = 1.0 if window is not None else fft / stride
            shifts = -(-fft // stride)
            g = np.zeros((2 * bins, shifts * stride))
            g[:, :fft] = irfft_matrix(bins, fft) * win[None, :] * factor
            self.kernel = self.upload(g.astype(np.float32), name="inverse_dft")
            norm = np.zeros((count + shifts - 1) * stride)
            for f in range(count):
                norm[f * stride:f * stride + fft] += win.astype(np.float32) ** 2
            safe = np.where(norm > 1e-10, norm, 1.0)
            self.inverse_norm = self.upload((1.0 / safe).astype(np.float32), name="inverse_norm")
        return shape[:-2] + (kept,)

    def run(self, bound):
        re, im = _pair(self, bound)
        _, stride, _, _, count, bins, start, kept = self.geometry(bound, re.shape)
        lead = tuple(re.shape[:-2])
        shifts = self.kernel.shape[1] // stride

        def compute():
            z = layout.reshape(merge.concatenate([re, im], -1), (-1, count, 2 * bins))
            n = z.shape[0]
            frames4 = layout.reshape(matmul.matmul(z, self.kernel), (n, count, shifts, stride))
            total = None
            for r in range(shifts):
                piece = strided_slice(frames4, [(0, n, 1), (0, count, 1), (r, 1, 1),
                                                (0, stride, 1)])
                placed = tile_repeat_pad.pad_constant(layout.reshape(piece, (n, count, stride)),
                                                [(0, 0), (r, shifts - 1 - r), (0, 0)])
                total = placed if total is None else elementwise.add(total, placed)
            y = elementwise.mul(layout.reshape(total, (n, -1)), self.inverse_norm)
            y = strided_slice(y, [(0, n, 1), (start, kept, 1)])
            return layout.reshape(y, lead + (kept,))
        return ownership.tidy.run(compute)
