"""The key/value cache of one generate call, on the GPU.

Allocated once when generation starts (zeros: a slot not yet written is masked out, and must
hold numbers, since a masked weight of 0 times NaN would still be NaN): per decoder block a key
and a value tensor of (batch, slots, kv heads, head dim), one slot per position of the output
sequence; and per attention span (None: every position so far; an int: a sliding window of that
many positions) a (1, slots) row of 1 for the slots a new token attends. The attention writes
each new token's keys and values into their slot in place (ops/rows_write.py) and `mark` updates
the rows, so a step neither allocates nor uploads any of it. Its tensors are ordinary tensors:
kg.memory() counts them while the call runs; dispose() frees them all.
"""
from __future__ import annotations

import numpy as np

from ..ops import creation
from ..ops.rows_write import write_rows
from ..tensors import ownership
from ..tensors.tensor import Tensor, tensor


class KVCache:
    def __init__(self, layers: int, batch: int, slots: int, heads: int, head_dim: int,
                 prompt_length: int, windows=(None,)):
        self.keys, self.values, self.valid = [], [], {}
        self._one = self._zero = None
        try:
            shape = (batch, slots, heads, head_dim)
            for _ in range(layers):
                self.keys.append(creation.zeros(shape))
                self.values.append(creation.zeros(shape))
            for window in windows:
                # The prompt pass writes slots 0 .. prompt_length - 1; the first step's token,
                # at prompt_length, attends to the last `window` of them and itself.
                row = np.zeros((1, slots), np.float32)
                row[:, max(0, prompt_length - window) if window else 0:prompt_length] = 1.0
                self.valid[window] = tensor(row, label="kv cache slots")
            self._one, self._zero = creation.ones((1, 1)), creation.zeros((1, 1))
        except BaseException:
            self.dispose()
            raise

    def tensors(self) -> list[Tensor]:
        return [t for t in self.keys + self.values + list(self.valid.values())
                + [self._one, self._zero] if t is not None]

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tensors())

    def mark(self, slot: int) -> None:
        """The token at `slot` is written this step: it is attended from now on, and a window
        of w positions lets go of slot - w."""
        for window, row in self.valid.items():
            write_rows(row, self._one, slot)
            if window is not None and slot - window >= 0:
                write_rows(row, self._zero, slot - window)

    def dispose(self) -> None:
        ownership.dispose(self.tensors())
        self.keys, self.values, self.valid = [], [], {}
        self._one = self._zero = None
