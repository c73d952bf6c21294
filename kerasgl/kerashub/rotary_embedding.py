"""The angles of KerasHub's rotary position embeddings, per token position and depth.

angle[p, i] = p * inverse_frequency[i mod depth/2], and the cos / sin tables the rotary op
(ops/rotary.py) applies. The inverse frequencies are KerasHub's, computed in float32 in its order
of operations:
- RotaryEmbedding (Mistral, Gemma): max_wavelength ** -(2i / depth), divided by scaling_factor
  ("linear" scaling, its default);
- LlamaRotaryEmbedding: 1 / max_wavelength ** (2i / depth), with Llama 3.1's smoothing between
  low_freq_factor and high_freq_factor when those are set (its position_scaling_factor is not
  used by KerasHub's Llama, so not here either).
The angles are made on the CPU (float32 products, then cos and sin correctly rounded) for the
positions of each call and uploaded: a few KB per call.
"""
from __future__ import annotations

import math

import numpy as np

from ..tensors.tensor import Tensor, tensor

F = np.float32


def rotary_inverse_frequencies(depth: int, max_wavelength: float,
                               scaling_factor: float = 1.0) -> np.ndarray:
    """keras_hub.layers.RotaryEmbedding's, rope_type "linear"."""
    freq_range = np.arange(0, depth, 2, dtype=F) / F(depth)
    inverse = np.power(F(max_wavelength), -freq_range, dtype=F)
    return (inverse / F(scaling_factor)).astype(F)


def llama_inverse_frequencies(depth: int, max_wavelength: float, frequency_adjustment=None,
                              low_freq_factor=None, high_freq_factor=None,
                              pretraining_length=None) -> np.ndarray:
    """keras_hub's LlamaRotaryEmbedding's (Llama 3.1's adjustment when its factors are set)."""
    freq_range = np.arange(0, depth, 2, dtype=F) / F(depth)
    inverse = (F(1.0) / np.power(F(max_wavelength), freq_range, dtype=F)).astype(F)
    if low_freq_factor is None:
        return inverse
    low_wavelength = F(pretraining_length / low_freq_factor)
    high_wavelength = F(pretraining_length / high_freq_factor)
    wavelength = (F(2 * math.pi) / inverse).astype(F)
    inverse = np.where(wavelength > low_wavelength, inverse / F(frequency_adjustment),
                       inverse).astype(F)
    smooth = ((F(pretraining_length) / wavelength - F(low_freq_factor))
              / F(high_freq_factor - low_freq_factor)).astype(F)
    smoothed = ((F(1) - smooth) * (inverse / F(frequency_adjustment)) + smooth * inverse)
    medium = (wavelength >= high_wavelength) & (wavelength <= low_wavelength)
    return np.where(medium, smoothed, inverse).astype(F)


class RotaryAngles:
    """The cos / sin tables of one set of inverse frequencies."""

    def __init__(self, inverse_frequencies: np.ndarray):
        self.inverse = np.asarray(inverse_frequencies, F)

    def tables(self, start: int, length: int) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) of positions start .. start + length - 1: (length, depth) float32."""
        positions = np.arange(length, dtype=F) + F(start)
        angles = (positions[:, None] * self.inverse[None, :]).astype(F)
        angles = np.concatenate([angles, angles], axis=1).astype(np.float64)
        return np.cos(angles).astype(F), np.sin(angles).astype(F)

    def upload(self, start: int, length: int) -> tuple[Tensor, Tensor]:
        cos, sin = self.tables(start, length)
        return tensor(cos, label="rotary cos"), tensor(sin, label="rotary sin")
