"""Text generation with KerasHub's meaning (keras_hub CausalLM.generate on token ids).

The inputs are a batch of prompts: `token_ids` (batch, length) and `padding_mask`, true where a
row holds its prompt; `length` is the output's length. Generation starts at the shortest
prompt's end, P: the first P tokens of every row go through the model in one pass (its keys and
values kept in a KVCache on the GPU), then one token per step, each step taking the token before
it. A row whose prompt is longer keeps its own tokens where its mask is true (KerasHub's
sampler: generated tokens never overwrite the prompt). Generation stops at `length`, or once
every row holds a stop token it generated itself (KerasHub's test, which looks at every
position the mask leaves free, padding included). The output is a dict of `token_ids` and
`padding_mask` (false after each row's first generated stop token); `strip_prompt=True` rolls
each row so that its completion comes first, as KerasHub does.

A model's architecture gives its layers to this loop through a DecoderStack.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputTypeError, InputValueError, ShapeError
from ..ops import half_activations, slicing
from ..tensors import ownership
from ..tensors.tensor import Tensor, tensor, view
from .kv_cache import KVCache
from .samplers import Sampler


class DecoderStack:
    """What generation needs of a decoder-only model (each architecture module makes one from
    its model's layers): the cache's geometry, and three computations on GPU tensors."""
    # Each block has call_with_cache(x, keys, values, start, valid) and `window` (its sliding
    # window, or None).
    blocks: list = []
    kv_heads = head_dim = vocabulary_size = 0
    max_positions: int | None = None  # the longest sequence its positions cover (None: any)

    def embed(self, ids: Tensor, start: int) -> Tensor:
        """(batch, tokens) int32 ids at positions start.. -> (batch, tokens, hidden)."""
        raise NotImplementedError

    def logits(self, last: Tensor) -> Tensor:
        """(batch, 1, hidden) outputs of the last block -> (batch, 1, vocabulary) logits."""
        raise NotImplementedError


def prompts(inputs, max_length) -> tuple[np.ndarray, np.ndarray]:
    """(token_ids int32, padding_mask bool), both (batch, length)."""
    if not isinstance(inputs, dict) or set(inputs) != {"token_ids", "padding_mask"}:
        raise InputTypeError("generate() takes a dict of 'token_ids' and 'padding_mask' (a batch "
                             "of prompts), or, for a model saved with its tokenizer, a string "
                             "or a list of strings.")
    arrays = [inputs["token_ids"], inputs["padding_mask"]]
    arrays = [a.numpy() if isinstance(a, Tensor) else np.asarray(a) for a in arrays]
    token_ids, mask = arrays
    if token_ids.ndim != 2 or mask.shape != token_ids.shape or token_ids.dtype.kind not in "iu" \
            or mask.dtype.kind not in "biu":
        raise ShapeError(f"generate(): token_ids and padding_mask must be integers of one shape "
                         f"(batch, length). Received {token_ids.dtype} {list(token_ids.shape)} "
                         f"and {mask.dtype} {list(mask.shape)}.")
    if token_ids.size and (token_ids.min() < np.iinfo(np.int32).min
                           or token_ids.max() > np.iinfo(np.int32).max):
        raise InputValueError("generate(): token ids outside the int32 range.")
    token_ids, mask = token_ids.astype(np.int32), mask != 0
    if max_length is not None:
        # A longer output than the inputs give: padded, as KerasHub's preprocessor pads prompts
        # to max_length.
        extra = int(max_length) - token_ids.shape[1]
        if extra < 0 and mask[:, int(max_length):].any():
            raise InputValueError(f"generate(): max_length={max_length} is shorter than a "
                                  f"prompt ({int(mask.sum(axis=1).max())} tokens).")
        token_ids = np.pad(token_ids, ((0, 0), (0, max(extra, 0))))[:, :int(max_length)]
        mask = np.pad(mask, ((0, 0), (0, max(extra, 0))))[:, :int(max_length)]
    return token_ids, mask


def stop_ids(stop_token_ids, end_token_ids) -> np.ndarray | None:
    if isinstance(stop_token_ids, str) and stop_token_ids == "auto":
        if not end_token_ids:
            raise InputValueError(
                "generate(stop_token_ids='auto') stops at the tokenizer's end token, and this "
                "model has no tokenizer: pass stop_token_ids=None to generate up to the length "
                "of token_ids, or a tuple of the token ids that end a sequence.")
        return np.asarray(end_token_ids, np.int32)
    if stop_token_ids is None:
        return None
    return np.atleast_1d(np.asarray(stop_token_ids, np.int64)).astype(np.int32)


def _ended(token_ids, mask, stop) -> np.ndarray:
    """Where each row holds a stop token it generated (keras_hub's any_equal with ~mask)."""
    return np.isin(token_ids, stop) & ~mask


def generate(stack: DecoderStack, inputs, max_length, stop_token_ids, strip_prompt,
             sampler: Sampler, end_token_ids=(), on_step=None,
             activation_dtype: str = "float32") -> dict:
    """See the module doc. on_step(token_ids, index): called after each token (streaming).
    activation_dtype: the model's (load_model's): "float16" keeps the tensors between the
    decoder's layers as halves, as predict does (the key/value cache stays float32)."""
    token_ids, mask = prompts(inputs, max_length)
    stop = stop_ids(stop_token_ids, end_token_ids)
    batch, length = token_ids.shape
    if stack.max_positions is not None and length > stack.max_positions:
        raise InputValueError(f"generate(): {length} positions, more than the "
                              f"{stack.max_positions} the model has (max_sequence_length).")
    vocabulary = stack.vocabulary_size
    if token_ids.size and (token_ids.min() < -vocabulary or token_ids.max() >= vocabulary):
        raise InputValueError(f"generate(): token ids must lie in [{-vocabulary}, "
                              f"{vocabulary - 1}] (the vocabulary). Received "
                              f"{int(token_ids.min())} to {int(token_ids.max())}.")
    start = int(mask.sum(axis=1).min()) if batch else 0
    if batch and start == 0:
        raise InputValueError("generate(): every prompt needs at least one token (a row of "
                              "padding_mask is all false).")
    sampler.start()
    index = start

    def done() -> bool:
        return index >= length or (stop is not None
                                   and bool(_ended(token_ids, mask, stop).any(axis=1).all()))
    if batch and not done():
        cache = KVCache(len(stack.blocks), batch, length, stack.kv_heads, stack.head_dim, start,
                        {block.window for block in stack.blocks})
        try:
            while True:
                chosen = ownership.tidy.run(lambda: sampler.next_tokens(
                    _forward(stack, cache, token_ids, index, start, activation_dtype)))
                token_ids[:, index] = np.where(mask[:, index], token_ids[:, index], chosen)
                index += 1
                if on_step is not None:
                    on_step(token_ids, index)
                if done():
                    break
        finally:
            cache.dispose()
    if stop is not None:
        ended = _ended(token_ids, mask, stop).astype(np.int32)
        padding = (np.cumsum(ended, axis=1) - ended) == 0
    else:
        padding = np.ones_like(mask)
    result = {"token_ids": token_ids, "padding_mask": padding}
    return _strip(result, mask) if strip_prompt else result


def _forward(stack: DecoderStack, cache: KVCache, token_ids, index: int, start: int,
             activation_dtype: str = "float32") -> Tensor:
    """The logits (batch, vocabulary) for position `index`: the prompt's pass when index is
    the start, else one step on the token before it. With activation_dtype "float16" the
    embeddings and each block's output are kept as halves (half_activations, as a model's
    graph keeps each layer's), the logits handed back as float32."""
    batch = token_ids.shape[0]
    first = 0 if index == start else index - 1
    ids = tensor(token_ids[:, first:index], dtype="int32")
    if index != start:
        cache.mark(first)
    with half_activations.running(activation_dtype):
        keep = half_activations.as_activation
        x = keep(stack.embed(ids, first))
        for block, keys, values in zip(stack.blocks, cache.keys, cache.values):
            x = keep(block.call_with_cache(x, keys, values, first,
                                           cache.valid[block.window] if index != start
                                           else None))
        if x.shape[1] > 1:
            x = slicing.strided_slice(x, [(0, batch, 1), (x.shape[1] - 1, 1, 1),
                                          (0, x.shape[2], 1)])
        logits = half_activations.as_output(keep(stack.logits(x)))
    return view(logits, (batch, logits.shape[-1]))


def _strip(result: dict, prompt_mask: np.ndarray) -> dict:
    """keras_hub's strip_prompt_function: each row rolled left by its prompt's length."""
    length = prompt_mask.shape[1]
    shifts = np.mod(-prompt_mask.sum(axis=1), length)
    index = np.arange(length)[None, :] - shifts[:, None]

    def roll(sequence):
        return np.take_along_axis(sequence, index, axis=1)
    return {"token_ids": roll(result["token_ids"]),
            "padding_mask": np.logical_xor(roll(prompt_mask), roll(result["padding_mask"]))}
