"""Audio layers (layers/preprocessing/audio.py: MelSpectrogram, STFTSpectrogram) and the keras.ops signal
operations (keras_ops/math/signal.py: stft, istft, rfft, irfft, fft, fft2, ifft2,
extract_sequences) against live Keras, on sums of sines with noise in [-1, 1]."""
import os

import numpy as np
import pytest
from keras_ref import assert_matches_keras, keras

import kerasgl as kg

ops = keras.ops
RATE = 8000


def signals(batch, samples, channels=None, seed=0, quiet=None):
    """Sums of three sines of random frequencies and phases plus uniform noise, scaled into
    [-1, 1]; `quiet`: the index of one signal made 100x quieter (a batch whose peaks differ)."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / RATE
    shape = (batch,) if channels is None else (batch, channels)
    out = np.zeros(shape + (samples,))
    for _ in range(3):
        freq = rng.uniform(50, RATE / 2 - 50, shape + (1,))
        phase = rng.uniform(0, 2 * np.pi, shape + (1,))
        out += rng.uniform(0.2, 1.0, shape + (1,)) * np.sin(2 * np.pi * freq * t + phase)
    out += rng.uniform(-0.3, 0.3, out.shape)
    out /= np.abs(out).max(axis=-1, keepdims=True)
    if quiet is not None:
        out[quiet] *= 0.01
    if channels is not None:
        out = np.swapaxes(out, -1, -2)         # [batch, samples, channels]
    return out.astype("float32")


def refused(model, tmp_path):
    path = os.path.join(str(tmp_path), f"{model.name}.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError) as caught:
        kg.load_model(path)
    return str(caught.value)


# -------------------------------------------------------------------------------------------------
# MelSpectrogram
# -------------------------------------------------------------------------------------------------
def test_mel_spectrogram_defaults_in_db(tmp_path):
    x = keras.Input((2000,))
    model = keras.Model(x, keras.layers.MelSpectrogram(fft_length=256, sequence_stride=128,
                                                       num_mel_bins=32, sampling_rate=RATE)(x),
                        name="mel_db")
    assert_matches_keras(model, tmp_path, inputs=[signals(3, 2000, quiet=1)])


def test_mel_spectrogram_keras_defaults(tmp_path):
    """fft_length 2048, stride 512, 128 bands at 16 kHz, in power: the narrow low triangles are
    where Keras's float32 filter bank differs from the exact one by up to 1e-4 of a weight (an
    exact bank misses these powers by 1.1x the tolerance); kerasgl builds it by Keras's float32
    steps (layers/preprocessing/audio.py mel_matrix): 0.37x."""
    x = keras.Input((8000,))
    model = keras.Model(x, [keras.layers.MelSpectrogram(power_to_db=False)(x),
                            keras.layers.MelSpectrogram()(x)], name="mel_defaults")
    assert_matches_keras(model, tmp_path, inputs=[signals(2, 8000)],
                         formats=(".keras",))


def test_mel_spectrogram_top_db_per_predict_batch(tmp_path):
    """The clamp's maximum is over the whole batch Keras computes at once: 40 signals run as 32
    and 8 in both, the 8 quiet ones clamped against their own peak."""
    x = keras.Input((600,))
    model = keras.Model(x, keras.layers.MelSpectrogram(fft_length=128, sequence_stride=64,
                                                       num_mel_bins=8, sampling_rate=RATE,
                                                       top_db=30.0)(x), name="mel_batches")
    data = signals(40, 600, seed=29)
    data[32:] *= 0.001
    assert_matches_keras(model, tmp_path, inputs=[data], formats=(".keras",))


def test_mel_spectrogram_options(tmp_path):
    x = keras.Input((1500,))
    outs = [keras.layers.MelSpectrogram(fft_length=300, sequence_stride=70, sequence_length=200,
                                        window="hamming", sampling_rate=RATE, num_mel_bins=20,
                                        min_freq=100.0, max_freq=3000.0, top_db=40.0,
                                        ref_power=3.0, min_power=1e-6)(x),
            keras.layers.MelSpectrogram(fft_length=256, sequence_stride=100, window=None,
                                        sampling_rate=RATE, num_mel_bins=16, power_to_db=False,
                                        mag_exp=1.0)(x),
            keras.layers.MelSpectrogram(fft_length=128, sequence_stride=64, sampling_rate=RATE,
                                        num_mel_bins=12, mag_exp=1.5, top_db=120.0)(x)]
    model = keras.Model(x, outs, name="mel_options")
    assert_matches_keras(model, tmp_path, inputs=[signals(2, 1500, seed=3)])


# -------------------------------------------------------------------------------------------------
# STFTSpectrogram
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_stft_spectrogram_modes(tmp_path, data_format):
    shape = (600, 2) if data_format == "channels_last" else (2, 600)
    x = keras.Input(shape)
    outs = []
    for mode, padding, expand in [("log", "valid", False), ("magnitude", "same", True),
                                  ("psd", "valid", True), ("real", "same", False),
                                  ("imag", "valid", True), ("stft", "same", False),
                                  ("angle", "same", True)]:
        outs.append(keras.layers.STFTSpectrogram(mode=mode, frame_length=64, frame_step=24,
                                                 fft_length=100 if mode == "psd" else 64,
                                                 window="hamming", padding=padding,
                                                 expand_dims=expand, data_format=data_format)(x))
    model = keras.Model(x, outs, name=f"stft_modes_{data_format}")
    data = signals(2, 600, channels=2, seed=5)
    if data_format == "channels_first":
        data = np.ascontiguousarray(np.swapaxes(data, 1, 2))
    assert_matches_keras(model, tmp_path, inputs=[data])


def test_stft_spectrogram_initial_kernels(tmp_path):
    """The kernels Keras initialises (window and scaling in them), not randomised."""
    x = keras.Input((1000, 1))
    outs = [keras.layers.STFTSpectrogram(mode="log", frame_length=128, frame_step=64,
                                         window="hann", scaling="density", periodic=True)(x),
            keras.layers.STFTSpectrogram(mode="psd", frame_length=100, fft_length=128,
                                         window="hamming", scaling="spectrum")(x),
            keras.layers.STFTSpectrogram(mode="magnitude", frame_length=96, frame_step=32,
                                         window=None, scaling=None, padding="same")(x),
            keras.layers.STFTSpectrogram(mode="angle", frame_length=64, frame_step=32)(x)]
    model = keras.Model(x, outs, name="stft_initial")
    assert_matches_keras(model, tmp_path, inputs=[signals(2, 1000, channels=1, seed=7)],
                         randomize=False)




# -------------------------------------------------------------------------------------------------
# keras.ops signal operations
# -------------------------------------------------------------------------------------------------
def test_stft_op(tmp_path):
    x = keras.Input((3, 700))
    window = np.random.default_rng(2).uniform(0.2, 1.0, 180).astype("float32").tolist()
    outs = [*ops.stft(x, 200, 64, 256, window="hann"),
            *ops.stft(x, 128, 50, 128, window="hamming", center=False),
            *ops.stft(x, 100, 40, 128, window=None),
            *ops.stft(x, 180, 60, 201, window=window)]
    model = keras.Model(x, outs, name="stft_op")
    assert_matches_keras(model, tmp_path, inputs=[signals(2, 700, channels=3, seed=11)
                                                  .swapaxes(1, 2).copy()])


def test_rfft_irfft_extract_sequences(tmp_path):
    x = keras.Input((4, 90))
    re, im = ops.rfft(x)
    re2, im2 = ops.rfft(x, 64)
    re3, im3 = ops.rfft(x, 101)
    outs = [re, im, re2, im2, re3, im3, ops.irfft((re, im)), ops.irfft((re3, im3), 101),
            ops.irfft((re2 * 0.5, im2), 50), ops.irfft((re, im), 120),
            ops.extract_sequences(x, 20, 7), ops.extract_sequences(x, 90, 1)]
    model = keras.Model(x, outs, name="rfft_ops")
    assert_matches_keras(model, tmp_path, inputs=[signals(2, 90, channels=4, seed=13)
                                                  .swapaxes(1, 2).copy()])


def test_extract_sequences_of_int32(tmp_path):
    x = keras.Input((30,), dtype="int32")
    model = keras.Model(x, ops.extract_sequences(x, 8, 5), name="int_frames")
    data = np.random.default_rng(3).integers(-1000, 1000, (2, 30)).astype("int32")
    expected = assert_matches_keras(model, tmp_path, inputs=[data])
    assert expected[0].dtype == np.int32


def test_fft_fft2_ifft2(tmp_path):
    a, b = keras.Input((6, 40)), keras.Input((6, 40))
    outs = [*ops.fft((a, b)), *ops.fft2((a, b)), *ops.ifft2((a * 2.0, b)),
            *ops.fft((a, ops.zeros_like(a)))]
    model = keras.Model([a, b], outs, name="fft_ops")
    data = signals(4, 240, seed=17).reshape(2, 2, 6, 40)
    assert_matches_keras(model, tmp_path, inputs=[data[0], data[1]])


def test_istft_op(tmp_path):
    x = keras.Input((2, 900))
    spectra = [ops.stft(x, 256, 64, 256), ops.stft(x, 200, 50, 256, window="hamming", center=False),
               ops.stft(x, 128, 32, 128, window=None)]
    outs = [ops.istft(spectra[0], 256, 64, 256),
            ops.istft(spectra[0], 256, 64, 256, length=700),
            ops.istft(spectra[1], 200, 50, 256, window="hamming", center=False),
            ops.istft(spectra[2], 128, 32, 128, window=None),
            ops.istft((spectra[0][0] * 0.5, spectra[0][1]), 256, 128, 256, length=950)]
    model = keras.Model(x, outs, name="istft_op")
    assert_matches_keras(model, tmp_path, inputs=[signals(2, 900, channels=2, seed=19)
                                                  .swapaxes(1, 2).copy()])


def test_signals_of_any_length(tmp_path):
    """Input((None,)): the frames follow the signal's length at predict. 1023 samples with stride
    128 is where Keras's MelSpectrogram.compute_output_shape says 9 frames; its call (and
    kerasgl) make 8."""
    x = keras.Input((None,))
    model = keras.Model(x, [keras.layers.MelSpectrogram(fft_length=256, sequence_stride=128,
                                                        num_mel_bins=16, sampling_rate=RATE)(x),
                            *ops.stft(x, 128, 64, 128), ops.extract_sequences(x, 50, 30)],
                        name="any_length")
    expected = assert_matches_keras(model, tmp_path, inputs=[signals(2, 1023, seed=23)])
    assert expected[0].shape == (2, 16, 8)


def test_refusals_at_load(tmp_path):
    x = keras.Input((3, None))
    rfft = refused(keras.Model(x, ops.rfft(x)[0], name="rfft_unknown"), tmp_path)
    assert "(RFFT): a signal of unknown size at load" in rfft, rfft
    istft = refused(keras.Model(x, ops.istft(ops.stft(x, 64, 32, 64), 64, 32, 64),
                                name="istft_unknown"), tmp_path)
    assert "(ISTFT): a frame axis of unknown size at load" in istft, istft
    y = keras.Input((500,))
    mel = refused(keras.Model(y, keras.layers.MelSpectrogram(fft_length=64, sequence_stride=32,
                                                             top_db=None)(y), name="mel_top_db"),
                  tmp_path)
    assert "(MelSpectrogram): top_db=None" in mel, mel


def test_complex_tensors_are_refused_at_load(tmp_path):
    x = keras.Input((5, 2))
    model = keras.Model(x, ops.view_as_real(ops.view_as_complex(x)), name="complex_views")
    message = refused(model, tmp_path)
    assert "ViewAsComplex" in message and "complex tensor" in message, message
