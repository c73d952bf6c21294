"""KerasHub's samplers: how generation picks the next token from the logits of the last one.

As keras_hub.samplers: probabilities are softmax(logits / temperature) in float32, then
- "greedy": the most probable token (computed on the GPU: only the token ids come back);
- "top_k" (k=5): a draw among the k most probable, in proportion to their probabilities;
- "top_p" (p=0.1, k=None): a draw among the most probable tokens whose cumulative probability
  stays within p (the first always kept), among the k most probable when k is set;
- "random": a draw over the whole vocabulary.
Draws are seeded (`seed=`): the same seed gives the same tokens on every generate call and
machine (numpy's PCG64), not keras_hub's draws (its JAX random stream). Without a seed each
call draws afresh. KerasHub's beam and contrastive searches are not supported.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputTypeError, InputValueError
from ..ops import arg_ops
from ..tensors import ownership
from ..tensors.tensor import Tensor


class Sampler:
    """The base: a temperature, and the draw of one token per row of logits."""
    needs_probabilities = True

    def __init__(self, temperature: float = 1.0, seed=None):
        if not float(temperature) > 0:
            raise InputValueError(f"{type(self).__name__}: temperature must be positive, not "
                                  f"{temperature!r}.")
        self.temperature = float(temperature)
        self.seed = seed

    def start(self) -> None:
        """Called once per generate call: a seeded sampler starts its draws again."""
        self._rng = np.random.default_rng(self.seed)

    def probabilities(self, logits: np.ndarray) -> np.ndarray:
        scaled = (logits.astype(np.float32) / np.float32(self.temperature)).astype(np.float32)
        scaled -= scaled.max(axis=-1, keepdims=True)
        exp = np.exp(scaled)
        return exp / exp.sum(axis=-1, keepdims=True)

    def next_tokens(self, logits: Tensor) -> np.ndarray:
        """One token id per row of `logits` (batch, vocabulary), as int32 numbers."""
        probabilities = self.probabilities(logits.numpy())
        return np.array([self.pick(row) for row in probabilities], np.int32)

    def pick(self, probabilities: np.ndarray) -> int:
        raise NotImplementedError

    def _draw(self, candidates: np.ndarray, weights: np.ndarray) -> int:
        weights = weights.astype(np.float64)
        return int(candidates[self._rng.choice(len(candidates), p=weights / weights.sum())])

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({options})"


class GreedySampler(Sampler):
    needs_probabilities = False

    def next_tokens(self, logits: Tensor) -> np.ndarray:
        # softmax keeps the order of the logits: the most probable token is their argmax.
        return ownership.tidy.run(
            lambda: arg_ops.arg_reduce(logits, axis=-1).numpy().astype(np.int32))


class RandomSampler(Sampler):
    def pick(self, probabilities):
        return self._draw(np.arange(len(probabilities)), probabilities)


class TopKSampler(Sampler):
    def __init__(self, k: int = 5, seed=None, temperature: float = 1.0):
        super().__init__(temperature, seed)
        if int(k) != k or k < 1:
            raise InputValueError(f"TopKSampler: k must be a positive integer, not {k!r}.")
        self.k = int(k)

    def pick(self, probabilities):
        top = np.argsort(-probabilities, kind="stable")[:self.k]
        return self._draw(top, probabilities[top])


class TopPSampler(Sampler):
    def __init__(self, p: float = 0.1, k: int | None = None, seed=None,
                 temperature: float = 1.0):
        super().__init__(temperature, seed)
        if not 0 < float(p) <= 1:
            raise InputValueError(f"TopPSampler: p must be in (0, 1], not {p!r}.")
        self.p, self.k = float(p), None if k is None else int(k)

    def pick(self, probabilities):
        order = np.argsort(-probabilities, kind="stable")[:self.k]
        sorted_probabilities = probabilities[order]
        cumulative = np.cumsum(sorted_probabilities, dtype=np.float32)
        # Keras keeps a token when the cumulative probability before it is within p.
        keep = np.concatenate([[True], cumulative[:-1] <= self.p])
        return self._draw(order[keep], sorted_probabilities[keep])


SAMPLERS = {"greedy": GreedySampler, "random": RandomSampler, "top_k": TopKSampler,
            "top_p": TopPSampler}
NOT_SUPPORTED = ("beam", "contrastive")


def get(sampler) -> Sampler:
    """A Sampler from a name (keras_hub.samplers.get's names) or a Sampler itself."""
    if isinstance(sampler, Sampler):
        return sampler
    if isinstance(sampler, str):
        if sampler in SAMPLERS:
            return SAMPLERS[sampler]()
        if sampler in NOT_SUPPORTED:
            raise InputValueError(f"The {sampler!r} sampler is not supported; use one of "
                                  f"{sorted(SAMPLERS)}.")
        raise InputValueError(f"Unknown sampler {sampler!r}; use one of {sorted(SAMPLERS)} or a "
                              "kerasgl.kerashub Sampler.")
    raise InputTypeError(f"sampler must be a name or a kerasgl.kerashub Sampler, not "
                         f"{type(sampler).__name__}.")
