"""Audio preprocessing layers: MelSpectrogram and STFTSpectrogram, and the short-time Fourier
transform they share with keras.ops.stft (keras_ops/math/signal.py).

Frames, window and DFT are one strided convolution (ops/conv.py) over the signal: its kernel holds
the window times the cosines and the negated sines of each frequency bin, side by side (computed
in float64 at load, from integer phases k * n mod N), or STFTSpectrogram's own kernels from the
file, as Keras's layer convolves with them. Keras on JAX runs an FFT in float32 instead; the two
agree to float32 rounding (about 1e-6 of the largest bin). The mel filter bank is built by
Keras's own float32 steps, whose rounding of the narrow triangles (1e-4 of a weight at 128 bands)
is part of Keras's answer.

MelSpectrogram's frames follow its call, not Keras's compute_output_shape, which says one more
where samples + 1 is a multiple of sequence_stride (1023 samples, stride 128: 9 said, 8 made).

MelSpectrogram's decibels clamp at `max - top_db`, the maximum over the whole tensor as Keras
takes it: over every sample of the batch of one predict call, not per sample.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import UnsupportedLayerError
from ...ops import conv, elementwise, layout, matmul, reduce
from ...ops.framing import frame_count, reflect_pad
from ...ops.slicing import strided_slice
from ...tensors import ownership
from .. import config_values
from ..base import Layer, register

KERAS_EPSILON = 1e-7   # keras.backend.epsilon()
_NAMED_WINDOWS = {"hann": 0.5, "hamming": 0.54}   # a - (1 - a) cos(2 pi n / N), scipy's periodic


def _config_list(value):
    """A window given as an array: a list, or Keras's serialised array."""
    if isinstance(value, dict):
        value = value.get("config", {}).get("value", value.get("value"))
    return value


def stft_window(node: Layer, window, sequence_length: int, fft_length: int) -> np.ndarray:
    """The fft_length window keras.ops.stft multiplies every frame by (float64 of float32 values):
    scipy's periodic hann / hamming or an array of sequence_length samples, centred by zeros; None:
    fft_length ones (Keras ignores sequence_length then)."""
    if window is None:
        return np.ones(fft_length)
    window = _config_list(window)
    if isinstance(window, str):
        if window not in _NAMED_WINDOWS:
            raise node.unsupported(f"window={window!r} (Keras's stft takes 'hann' or 'hamming')")
        a = _NAMED_WINDOWS[window]
        n = np.arange(sequence_length)
        values = a - (1.0 - a) * np.cos(2.0 * np.pi * n / sequence_length)
    else:
        try:
            values = np.asarray(window, np.float64)
        except (TypeError, ValueError):
            raise node.unsupported(f"window={window!r}") from None
        if values.shape != (sequence_length,) or not np.all(np.isfinite(values)):
            raise node.unsupported(f"a window of shape {list(values.shape)} (finite numbers, one "
                                   f"per sample of sequence_length={sequence_length})")
    left = (fft_length - sequence_length) // 2
    out = np.zeros(fft_length)
    out[left:left + sequence_length] = values.astype(np.float32)
    return out


MAX_MATRIX = 2 ** 26     # float32 elements (256 MiB) of a matrix made at load


def check_matrix(node: Layer, rows: int, cols: int, what: str) -> None:
    """Refuse, before making it, a matrix of sizes from the config too large to hold."""
    if rows * cols > MAX_MATRIX:
        raise node.unsupported(f"a {what} of {rows} x {cols} values (sizes in the config that "
                               f"make more than {MAX_MATRIX} on the GPU)")


def dft_kernel(window: np.ndarray, fft_length: int) -> np.ndarray:
    """[len(window), 2 * bins] float32: window * cos(2 pi k n / N), then window * -sin(...), for
    the bins k < N // 2 + 1 of a real signal's DFT (N = fft_length)."""
    n = np.arange(len(window))[:, None]
    k = np.arange(fft_length // 2 + 1)[None, :]
    phase = 2.0 * np.pi * ((n * k) % fft_length) / fft_length
    w = window[:, None]
    return np.concatenate([w * np.cos(phase), -w * np.sin(phase)], axis=1).astype(np.float32)


class StridedDft:
    """A kernel [taps, columns] run over the frames of signals [n, length] that start `stride`
    apart: [n, frames, columns]. `pads` zero-pads, `reflect` reflects each end first (centring)."""

    def __init__(self, kernel: np.ndarray, stride: int, upload, reflect: int = 0, pads=(0, 0)):
        self.taps, self.columns = kernel.shape
        self.stride, self.reflect, self.pads = stride, reflect, tuple(pads)
        self.kernel = conv.pack_conv(np.asarray(kernel, np.float32)[:, None, :], None, 1, upload)

    def frames(self, length):
        if length is None:
            return None
        return frame_count(length + 2 * self.reflect + sum(self.pads), self.taps, self.stride)

    def __call__(self, x):
        n, length = x.shape
        count = self.frames(length)

        def compute():
            signal = reflect_pad(x, self.reflect) if self.reflect else x
            x4 = layout.reshape(signal, (n, 1, signal.shape[-1], 1))
            y = conv.conv2d(x4, self.kernel, (1, self.stride), padding=((0, 0), self.pads),
                            out_hw=(1, count))
            return layout.reshape(y, (n, count, self.columns))
        return ownership.tidy.run(compute)


def halves(y):
    """(y[..., :k], y[..., k:]) of y [..., 2k] (the real and imaginary columns)."""
    k = y.shape[-1] // 2
    whole = [(0, d, 1) for d in y.shape[:-1]]
    return strided_slice(y, whole + [(0, k, 1)]), strided_slice(y, whole + [(k, k, 1)])


def power_of(y):
    """re^2 + im^2 of y [..., 2k] holding re, then im."""
    re, im = halves(y)
    return ownership.tidy.run(lambda: elementwise.add(elementwise.mul(re, re),
                                                      elementwise.mul(im, im)))


def check_reflect(layer: Layer, length, pad: int) -> None:
    if length is not None and pad >= length:
        raise layer.shape_error(f"a signal of {length} samples cannot be reflect-padded by {pad} "
                                "(Keras's centred stft needs more samples than fft_length // 2).")


# -------------------------------------------------------------------------------------------------
# MelSpectrogram
# -------------------------------------------------------------------------------------------------
_MEL_BREAK_FREQUENCY_HERTZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0


def _linspace32(start, stop, num: int) -> np.ndarray:
    """jnp.linspace in float32, as JAX computes it: start * (1 - step) + stop * step."""
    f32 = np.float32
    start, stop = f32(start), f32(stop)
    if num == 1:
        return np.array([start], f32)
    div = num - 1
    step = np.arange(div, dtype=f32) / f32(div)
    return np.concatenate([start * (f32(1) - step) + stop * step, [stop]]).astype(f32)


def _hertz_to_mel(f):
    f32 = np.float32
    return f32(_MEL_HIGH_FREQUENCY_Q) * np.log(f32(1) + f / f32(_MEL_BREAK_FREQUENCY_HERTZ))


def mel_matrix(num_mel_bins, num_spectrogram_bins, sampling_rate, lower_hz, upper_hz) -> np.ndarray:
    """Keras's MelSpectrogram.linear_to_mel_weight_matrix (HTK triangles, DC bin zero), computed in
    float32 by the same steps: Keras's own rounding of the narrow triangles' slopes (1e-5 of a
    weight at 128 bands) is part of the answer."""
    f32 = np.float32
    nyquist = f32(sampling_rate) / f32(2)
    linear = _linspace32(0.0, nyquist, num_spectrogram_bins)[1:]
    bins_mel = _hertz_to_mel(linear)[:, None]
    edges = _linspace32(_hertz_to_mel(f32(lower_hz)), _hertz_to_mel(f32(upper_hz)),
                        num_mel_bins + 2)
    lower, center, upper = edges[:-2][None], edges[1:-1][None], edges[2:][None]
    with np.errstate(divide="ignore", invalid="ignore"):
        lower_slopes = (bins_mel - lower) / (center - lower)
        upper_slopes = (upper - bins_mel) / (upper - center)
    weights = np.maximum(f32(0), np.minimum(lower_slopes, upper_slopes))
    return np.pad(weights, [[1, 0], [0, 0]]).astype(f32)


@register("MelSpectrogram")
class MelSpectrogram(Layer):
    """Signals [batch, samples] -> [batch, num_mel_bins, frames]: |stft|^mag_exp (centred, reflect
    padding) through the mel filter bank, in decibels (power_to_db) clamped at top_db below the
    largest value of the whole batch."""
    shaders = ("strided_slice.comp", "concat.comp", "conv2d.comp", "binary.comp", "unary.comp",
               "matmul.comp", "reduce.comp", "transpose.comp")
    mask_behaviour = "drops"
    weight_arrays = 0
    drops_nan = True          # its convolution and maxima run GLSL min / max

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.fft_length = config_values.positive_int(self, "fft_length", 2048)
        self.stride = config_values.positive_int(self, "sequence_stride", 512)
        length = config_values.optional_positive_int(self, "sequence_length")
        self.sequence_length = length or self.fft_length
        if self.sequence_length > self.fft_length:
            raise config_values.error(self, "sequence_length", length,
                                      f"at most fft_length={self.fft_length}")
        self.num_mel_bins = config_values.positive_int(self, "num_mel_bins", 128)
        bins = self.fft_length // 2 + 1
        check_matrix(self, self.fft_length, 2 * bins, "DFT kernel")
        check_matrix(self, bins, self.num_mel_bins, "mel filter bank")
        self.window = stft_window(self, self.option("window", "hann"), self.sequence_length,
                                  self.fft_length)
        self.sampling_rate = config_values.number(self, "sampling_rate", 16000, finite=True)
        self.min_freq = config_values.number(self, "min_freq", 20.0, finite=True)
        max_freq = config_values.optional_number(self, "max_freq")
        self.max_freq = max_freq or int(self.sampling_rate / 2)
        self.power_to_db = config_values.flag(self, "power_to_db", True)
        self.mag_exp = config_values.number(self, "mag_exp", 2.0, finite=True)
        self.min_power = config_values.number(self, "min_power", 1e-10, finite=True, minimum=0.0)
        self.ref_power = config_values.number(self, "ref_power", 1.0, finite=True)
        if self.power_to_db:
            if self.option("top_db", 80.0) is None:
                raise self.unsupported("top_db=None with power_to_db (Keras's own call fails on it)")
            self.top_db = config_values.number(self, "top_db", 80.0, finite=True)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 2:
            raise self.unsupported(f"an input of rank {len(input_shape)} (signals [batch, samples])")
        check_reflect(self, input_shape[1], self.fft_length // 2)
        frames = None if input_shape[1] is None else frame_count(
            input_shape[1] + 2 * (self.fft_length // 2), self.fft_length, self.stride)
        return (input_shape[0], self.num_mel_bins, frames)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        bins = self.fft_length // 2 + 1
        self.dft = StridedDft(dft_kernel(self.window, self.fft_length), self.stride, self.upload,
                              reflect=self.fft_length // 2)
        mel = mel_matrix(self.num_mel_bins, bins, self.sampling_rate, self.min_freq, self.max_freq)
        self.mel = self.upload(mel.astype(np.float32), name="mel_matrix")
        ref = np.float32(max(abs(self.ref_power), self.min_power))
        self.db_shift = float(np.float32(10.0) * np.log10(ref))
        self.built = True

    def spectrum(self, y):
        """|X|^mag_exp from the DFT columns y [..., 2 * bins]."""
        power = power_of(y)
        if self.mag_exp == 2.0:
            return power
        magnitude = elementwise.unary("sqrt", power)
        if self.mag_exp == 1.0:
            return magnitude
        return elementwise.binary("pow", magnitude, self.mag_exp)

    def call(self, inputs, **kwargs):
        def compute():
            mel = matmul.matmul(self.spectrum(self.dft(inputs)), self.mel)
            if self.power_to_db:
                log = elementwise.unary("log", elementwise.maximum(mel, self.min_power))
                db = elementwise.mul(log, float(10.0 / math.log(10.0)))
                if self.db_shift:
                    db = elementwise.sub(db, self.db_shift)
                floor = elementwise.sub(reduce.reduce("max", db, None, True), self.top_db)
                mel = elementwise.maximum(db, floor)
            return layout.transpose(mel, (0, 2, 1))
        return ownership.tidy.run(compute)


# -------------------------------------------------------------------------------------------------
# STFTSpectrogram
# -------------------------------------------------------------------------------------------------
_STFT_MODES = ("log", "magnitude", "psd", "real", "imag", "angle", "stft")


@register("STFTSpectrogram")
class STFTSpectrogram(Layer):
    """Signals [batch, samples, channels] (channels_first: [batch, channels, samples]) -> each
    channel's frames convolved with the file's real_kernel / imag_kernel (frame_length taps,
    frame_step apart), in the layer's mode and layout. window, periodic and scaling only made the
    kernels Keras initialised: the file's kernels are what runs."""
    shaders = ("strided_slice.comp", "conv2d.comp", "binary.comp", "unary.comp", "transpose.comp")
    mask_behaviour = "drops"
    drops_nan = True

    @classmethod
    def weight_count(cls, config: dict) -> int:
        return 1 if config.get("mode", "log") in ("real", "imag") else 2

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.mode = config_values.choice(self, "mode", _STFT_MODES, "log")
        if self.mode == "angle" and "arctan2" not in elementwise.BINARY_OPS:
            raise self.unsupported("mode='angle' (arctan2 of the imaginary and real parts: "
                                   "this kerasgl has no arctan2 kernel)")
        self.frame_length = config_values.positive_int(self, "frame_length", 256)
        step = config_values.optional_positive_int(self, "frame_step")
        self.frame_step = step or self.frame_length // 2
        fft = config_values.optional_positive_int(self, "fft_length")
        self.fft_length = fft or 2 ** int(math.ceil(math.log2(self.frame_length)))
        self.bins = self.fft_length // 2 + 1
        if self.mode == "psd" and self.bins < 2:
            raise self.unsupported(f"mode='psd' with fft_length={self.fft_length} (Keras's psd "
                                   "broadcasts a single bin against two)")
        self.padding = config_values.choice(self, "padding", ("valid", "same"), "valid")
        self.expand_dims = config_values.flag(self, "expand_dims", False)
        self.channels_first = config_values.choice(
            self, "data_format", ("channels_last", "channels_first"), "channels_last") \
            == "channels_first"
        self.expect_weights(self.weight_count(self.config))
        for w in self.weights_np:
            if tuple(w.shape) != (self.frame_length, 1, self.bins):
                raise self.shape_error(f"a kernel of shape {list(w.shape)}; expected "
                                       f"{[self.frame_length, 1, self.bins]}.")
            if not np.all(np.isfinite(w)):
                raise UnsupportedLayerError(
                    f"Layer '{self.name}' ({self.class_name}): its kernels hold NaN or infinite "
                    "values, which kerasgl's convolution (GLSL min / max) would not carry as Keras "
                    "does, so they are refused (docs/limitations.md).")

    def _geometry(self, length):
        if length is None:
            return None, (0, 0)
        out, before, after = conv.conv_padding(length, self.frame_length, self.frame_step, 1,
                                               self.padding)
        return out, (before, after)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise self.shape_error(f"expects inputs of rank 3, got shape {list(input_shape)}.")
        batch = input_shape[0]
        channels, length = (input_shape[1], input_shape[2]) if self.channels_first \
            else (input_shape[2], input_shape[1])
        frames, _ = self._geometry(length)
        if frames == 0:
            raise self.unsupported(f"a signal of {length} samples, shorter than "
                                   f"frame_length={self.frame_length} (no whole frame)")
        freq = self.bins * (2 if self.mode == "stft" else 1)
        if self.expand_dims:
            return (batch, channels, frames, freq) if self.channels_first \
                else (batch, frames, freq, channels)
        flat = None if channels is None else channels * freq
        return (batch, flat, frames) if self.channels_first else (batch, frames, flat)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        kernel = np.concatenate([w[:, 0, :] for w in self.weights_np], axis=1)
        self.kernel = conv.pack_conv(kernel[:, None, :], None, 1, self.upload)
        if self.mode == "psd":
            scale = np.full(self.bins, 2.0, np.float32)
            scale[[0, -1]] = 1.0
            self.psd_scale = self.upload(scale, name="psd_scale")
        self.built = True

    def _values(self, y):
        """The mode's values from the convolution's columns y [..., K]."""
        if self.mode in ("real", "imag", "stft"):
            return y
        if self.mode == "angle":
            re, im = halves(y)
            return elementwise.binary("arctan2", im, re)
        power = power_of(y)
        if self.mode == "psd":
            return elementwise.mul(power, self.psd_scale)
        magnitude = elementwise.unary("sqrt", elementwise.maximum(power, KERAS_EPSILON))
        if self.mode == "magnitude":
            return magnitude
        return elementwise.unary("log", elementwise.maximum(magnitude, KERAS_EPSILON))

    def call(self, inputs, **kwargs):
        def compute():
            x = inputs if self.channels_first else layout.transpose(inputs, (0, 2, 1))
            batch, channels, length = x.shape
            frames, pads = self._geometry(length)
            x4 = layout.reshape(x, (batch * channels, 1, length, 1))
            y = conv.conv2d(x4, self.kernel, (1, self.frame_step), padding=((0, 0), pads),
                            out_hw=(1, frames))
            y = self._values(layout.reshape(y, (batch, channels, frames, y.shape[-1])))
            freq = y.shape[-1]
            if self.channels_first:
                if self.expand_dims:
                    return y
                return layout.reshape(layout.transpose(y, (0, 1, 3, 2)),
                                      (batch, channels * freq, frames))
            if self.expand_dims:
                return layout.transpose(y, (0, 2, 3, 1))
            return layout.reshape(layout.transpose(y, (0, 2, 1, 3)), (batch, frames, channels * freq))
        return ownership.tidy.run(compute)
