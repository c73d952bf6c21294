#!/usr/bin/env python
"""Writes tests/data/cudnn/cudnn_rnn.h5: a Keras 2 file holding a CuDNNLSTM and a CuDNNGRU.

tf-keras cannot build CuDNN layers without a CUDA GPU, so the file is made the way Keras 2 itself
relates the two weight layouts: from plain-layer weights, by the conversion Keras 2's h5 loader
applies (tf-keras `hdf5_format.preprocess_weights_for_loading`, `_convert_rnn_weights`, with
from_cudnn=False: each gate's input kernel transposed and reshaped in C order, each gate's
recurrent kernel transposed, an LSTM's bias split into two halves, a GRU's two bias rows
flattened). Keras 2 loads such a file into LSTM / GRU(reset_after=True) layers by the inverse
conversion, so Keras's answer for the file is that of the plain layers with the plain weights
with sigmoid recurrent activations (what CuDNN computes).

The structure is that of a real tf-keras 2.21 file (tests/data/keras2/lstm_keras2_defaults.h5:
Input(5, 3) -> LSTM(4, return_sequences, return_state) -> GRU(3)); its LSTM weights are kept, the
GRU's (reset_after=True needs a second bias row) are drawn with a fixed seed. The plain weights
go to tests/data/cudnn/plain_weights.npz, from which tests/test_cudnn_rnn.py builds
the Keras 3 reference.

    python scripts/make_cudnn_fixtures.py
"""
from __future__ import annotations

import json
import os
import shutil

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "keras2")
SOURCE = os.path.join(DATA, "lstm_keras2_defaults.h5")
TARGET = os.path.join(ROOT, "tests", "data", "cudnn", "cudnn_rnn.h5")
PLAIN = os.path.join(ROOT, "tests", "data", "cudnn", "plain_weights.npz")


def per_gate(kernel, transform, gates):
    return np.hstack([transform(k) for k in np.hsplit(kernel, gates)])


def to_cudnn(weights, gates):
    """Keras 2's convert_{lstm,gru}_weights(weights, from_cudnn=False)."""
    kernel = per_gate(weights[0], lambda k: k.T.reshape(k.shape, order="C"), gates)
    recurrent = per_gate(weights[1], lambda k: k.T, gates)
    bias = np.tile(0.5 * weights[2], 2) if gates == 4 else np.asarray(weights[2]).reshape(-1)
    return [kernel, recurrent, bias]


CUDNN_KEYS = ("name", "trainable", "dtype", "return_sequences", "return_state", "go_backwards",
              "stateful", "time_major", "units", "kernel_initializer", "recurrent_initializer",
              "bias_initializer", "kernel_regularizer", "recurrent_regularizer",
              "bias_regularizer", "activity_regularizer", "kernel_constraint",
              "recurrent_constraint", "bias_constraint")


def main() -> None:
    shutil.copy(SOURCE, TARGET)
    rng = np.random.default_rng(7)
    with h5py.File(TARGET, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        plain = {}
        for layer in config["config"]["layers"]:
            kind = {"LSTM": "CuDNNLSTM", "GRU": "CuDNNGRU"}.get(layer["class_name"])
            if kind is None:
                continue
            name, cfg = layer["config"]["name"], layer["config"]
            group = f["model_weights"][name]
            old_names = [n.decode() if isinstance(n, bytes) else n for n in group.attrs["weight_names"]]
            weights = [np.asarray(group[n]) for n in old_names]
            gates = 4 if kind == "CuDNNLSTM" else 3
            if gates == 3:      # GRU(reset_after=True): an input and a recurrent bias row
                weights = [rng.uniform(-0.6, 0.6, w.shape).astype(np.float32) for w in weights[:2]]
                weights.append(rng.uniform(-0.3, 0.3, (2, weights[1].shape[1])).astype(np.float32))
            plain.update({f"{name}_{i}": w for i, w in enumerate(weights)})
            layer["class_name"] = kind
            layer["config"] = {k: cfg[k] for k in CUDNN_KEYS if k in cfg}
            if kind == "CuDNNLSTM":
                layer["config"]["unit_forget_bias"] = True
            del f["model_weights"][name]
            group = f["model_weights"].create_group(name)
            new_names = [f"{name}/{w}:0" for w in ("kernel", "recurrent_kernel", "bias")]
            group.attrs["weight_names"] = [n.encode() for n in new_names]
            for n, w in zip(new_names, to_cudnn(weights, gates)):
                group.create_dataset(n, data=w.astype(np.float32))
        f.attrs["model_config"] = json.dumps(config).encode()
    np.savez(PLAIN, **plain)
    print("wrote", TARGET, "and", PLAIN)


if __name__ == "__main__":
    main()
