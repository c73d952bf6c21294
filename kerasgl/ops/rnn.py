"""Recurrences (SimpleRNN, LSTM, GRU): the input projection of every time step as one matmul,
then the whole loop over time in one dispatch of shaders/rnn_recurrence.comp.

Weights are packed once by `pack_cell` (units padded to a multiple of 4, per gate, so the shader
works on vec4 quads of units); `recurrence` runs a packed cell over a (batch, time, features)
sequence with optional initial states and a (batch, time) mask of 0/1 floats.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import GPULimitError, ShapeError
from ..tensors import ownership
from ..tensors.tensor import Tensor, empty
from . import dispatch, matmul
from .storage_ops import any_storage

CELLS = {"simple": (0, 1), "lstm": (1, 4), "gru": (2, 3), "gru_reset_before": (3, 3)}
# Activations over the units of a step (not pointwise), by the name `recurrence` takes them under.
NORMALIZERS = {"softmax": 1, "log_softmax": 2}
MAX_LANES = 64
SHARED_BYTES = 32768        # GL 4.3 guarantees at least 32 KiB of shared memory per work group


@dataclass
class PackedCell:
    """A cell's weights as the shader reads them (numpy; the caller uploads and owns them)."""
    kind: str
    units: int
    padded: int                 # units rounded up to a multiple of 4
    kernel: np.ndarray          # (input_dim, G*padded)
    input_bias: np.ndarray | None        # (G*padded,)
    recurrent_kernel: np.ndarray         # (padded, G*padded)
    recurrent_bias: np.ndarray | None    # (G*padded,) GRU reset_after only


def _pad_gates(matrix: np.ndarray, gates: int, units: int, padded: int) -> np.ndarray:
    """(..., G*units) -> (..., G*padded), zero columns after each gate's block."""
    lead = matrix.shape[:-1]
    blocks = matrix.reshape(lead + (gates, units))
    out = np.zeros(lead + (gates, padded), np.float32)
    out[..., :units] = blocks
    return out.reshape(lead + (gates * padded,))


def pack_cell(kind: str, units: int, kernel, recurrent_kernel, bias=None) -> PackedCell:
    """kind: 'simple', 'lstm', 'gru' (reset_after, bias (2, 3u)) or 'gru_reset_before'
    (bias (3u,)). Weights as Keras stores them: kernel (in, G*u), recurrent_kernel (u, G*u)."""
    gates = CELLS[kind][1]
    padded = 4 * math.ceil(units / 4)
    kernel = np.asarray(kernel, np.float32)
    recurrent_kernel = np.asarray(recurrent_kernel, np.float32)
    if kernel.shape[1:] != (gates * units,) or recurrent_kernel.shape != (units, gates * units):
        raise ShapeError(f"{kind} cell of {units} units: kernel {kernel.shape} and recurrent "
                         f"kernel {recurrent_kernel.shape} do not match.")
    rec = np.zeros((padded, gates * padded), np.float32)
    rec[:units] = _pad_gates(recurrent_kernel, gates, units, padded)
    input_bias = recurrent_bias = None
    if bias is not None:
        bias = np.asarray(bias, np.float32)
        if kind == "gru":
            input_bias = _pad_gates(bias[0], gates, units, padded)
            recurrent_bias = _pad_gates(bias[1], gates, units, padded)
        else:
            input_bias = _pad_gates(bias.reshape(-1), gates, units, padded)
    return PackedCell(kind, units, padded, _pad_gates(kernel, gates, units, padded), input_bias,
                      rec, recurrent_bias)


def _config(batch: int, padded: int, reset_before: bool, normalizes: bool = False
            ) -> tuple[int, int, int]:
    """(lanes, quads per lane, sequences per work group). normalizes: softmax / log_softmax,
    whose work-group reduction keeps 2 x 4 partials per lane and sequence in shared memory."""
    quads = padded // 4
    lanes = min(MAX_LANES, quads)
    qpl = math.ceil(quads / lanes)
    per_sequence = padded * 4 * (2 if reset_before else 1) + (2 * 4 * lanes * 4 if normalizes else 0)
    # The smallest power of two >= batch, at most 4: each load of the recurrent kernel feeds
    # every sequence of the group. Measured on llvmpipe (2-layer LSTM, 128 and 512 units): 4 beat
    # 1, 2 and 8 from batch 3 up (batch 32: 4.4 -> 2.3 ms/step); batch 1 stays at 1 sequence.
    bpg = min(4, 1 << max(0, batch - 1).bit_length())
    while bpg > 1 and bpg * per_sequence > SHARED_BYTES:
        bpg //= 2
    if per_sequence > SHARED_BYTES:
        raise GPULimitError(f"A recurrent layer of {padded} units needs {per_sequence} bytes of "
                            f"shared memory per sequence; at most {SHARED_BYTES} are available.")
    return lanes, qpl, bpg


@any_storage
def recurrence(x: Tensor, kind: str, units: int, kernel: Tensor, recurrent_kernel: Tensor,
               input_bias: Tensor | None = None, recurrent_bias: Tensor | None = None,
               activation: tuple = ("act_tanh", ()), recurrent_activation: tuple = ("act_sigmoid", ()),
               initial_h: Tensor | None = None, initial_c: Tensor | None = None,
               mask: Tensor | None = None, go_backwards: bool = False,
               return_sequences: bool = False, zero_masked_output: bool = False,
               zero_until_unmasked: bool = False, time_order: bool = False) -> tuple[Tensor, Tensor, Tensor | None]:
    """Run a packed cell (uploaded weights of `pack_cell`) over x of shape (batch, time, features).

    activation / recurrent_activation: (GLSL function, parameters), or ("softmax", ()) /
    ("log_softmax", ()) for those over the units of each step. Returns (output, h, c):
    output (batch, time, units) in processing order when return_sequences (reversed time for
    go_backwards, as Keras; input time order with time_order), else (batch, units) the last step's; h, c the final states (c is
    None except for LSTM). Masked steps (mask 0) keep the state and repeat the previous output
    (zeros with zero_masked_output; zeros before the first kept step with zero_until_unmasked).
    """
    cell, gates = CELLS[kind]
    if x.ndim != 3:
        raise ShapeError(f"A recurrence takes inputs of shape (batch, time, features). "
                         f"Received {list(x.shape)}.")
    batch, steps, _ = x.shape
    padded = recurrent_kernel.shape[0]
    for name, state in (("initial h", initial_h), ("initial c", initial_c)):
        if state is not None and state.shape != (batch, units):
            raise ShapeError(f"The {name} state must have shape {[batch, units]}. Received "
                             f"{list(state.shape)}.")
    if mask is not None and mask.shape != (batch, steps):
        raise ShapeError(f"The mask must have shape {[batch, steps]}. Received {list(mask.shape)}.")
    (act, act_params), (rec, rec_params) = activation, recurrent_activation
    # softmax / log_softmax are not pointwise: the shader normalises over the units in the group.
    act, act_norm = _normalizer(act)
    rec, rec_norm = _normalizer(rec)
    if act_params and rec_params and tuple(act_params) != tuple(rec_params):
        raise ShapeError(f"A recurrence cannot combine {act} and {rec} with different parameters.")
    params = tuple(act_params) or tuple(rec_params)

    def compute():
        out = empty((batch, steps, units) if return_sequences else (batch, units))
        h_out = empty((batch, units))
        c_out = empty((batch, units)) if kind == "lstm" else None
        if batch == 0:
            return out, h_out, c_out
        lanes, qpl, bpg = _config(batch, padded, kind == "gru_reset_before",
                                  bool(act_norm or rec_norm))
        if steps == 0:
            raise ShapeError("A recurrence needs at least one time step. Received 0.")
        xproj = matmul.dense(x, kernel, input_bias)
        stand_in = out      # unused bindings still need a buffer (the shader never touches them)
        defines = {
            "CELL": cell, "G": gates, "UQ": padded // 4, "LANES": lanes, "QPL": qpl, "BPG": bpg,
            "ACT": act, "REC_ACT": rec, "ACT_NORM": act_norm, "REC_NORM": rec_norm,
            "HAS_MASK": mask is not None,
            "HAS_REC_BIAS": recurrent_bias is not None, "HAS_H0": initial_h is not None,
            "HAS_C0": initial_c is not None, "RETURN_SEQUENCES": return_sequences,
        }
        uniforms = {"batch": batch, "T": steps, "units": units, "go_backwards": int(go_backwards),
                    "zero_masked_output": int(zero_masked_output),
                    "zero_until_unmasked": int(zero_until_unmasked), "time_order": int(time_order),
                    **{f"act_p{i}": float(v) for i, v in enumerate(params)}}
        buffers = [xproj, recurrent_kernel] + [
            t if t is not None else stand_in
            for t in (recurrent_bias, initial_h, initial_c, mask)] + [
            out, h_out, c_out if c_out is not None else stand_in]
        dispatch.run("rnn_recurrence.comp", defines=defines, buffers=buffers, uniforms=uniforms,
                     groups=(math.ceil(batch / bpg), 1, 1))
        return out, h_out, c_out
    return ownership.tidy.run(compute)


def _normalizer(function: str) -> tuple[str, int]:
    """(pointwise GLSL function, ACT_NORM code) for an activation function name."""
    if function in NORMALIZERS:
        return "act_linear", NORMALIZERS[function]
    return function, 0


def upload_cell(packed: PackedCell, keep) -> dict:
    """The packed weights on the GPU, each passed through `keep` (e.g. Layer.upload)."""
    return {
        "kernel": keep(packed.kernel),
        "recurrent_kernel": keep(packed.recurrent_kernel),
        "input_bias": keep(packed.input_bias) if packed.input_bias is not None else None,
        "recurrent_bias": keep(packed.recurrent_bias) if packed.recurrent_bias is not None else None,
    }

