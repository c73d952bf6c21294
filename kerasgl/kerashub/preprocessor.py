"""KerasHub's CausalLMPreprocessor around generate(): string prompts to packed token ids, and
the generated ids back to strings (keras_hub's generate_preprocess and generate_postprocess).

A prompt is tokenized, the tokenizer's start token put first, cut to the sequence length and
padded with the padding id after it (the mask false there); no end token is added, generation
continuing the prompt. The output keeps, of each row, the tokens its mask leaves and that are
not special tokens, detokenized.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputValueError

# keras_hub's CausalLMPreprocessor default, for a preset saved without a sequence_length.
DEFAULT_SEQUENCE_LENGTH = 1024


def is_text(inputs) -> bool:
    """A prompt (a string) or a batch of them (a list or tuple of strings)."""
    if isinstance(inputs, str):
        return True
    return isinstance(inputs, (list, tuple)) and bool(inputs) \
        and all(isinstance(item, str) for item in inputs)


def sequence_length(max_length, preprocessor: dict | None) -> int:
    """generate()'s output length for strings: max_length, else the preprocessor's."""
    length = max_length if max_length is not None else \
        (preprocessor or {}).get("sequence_length") or DEFAULT_SEQUENCE_LENGTH
    if int(length) != length or length < 2:
        raise InputValueError(f"generate(): max_length must be an integer of at least 2 (the "
                              f"start token and one more), not {length!r}.")
    return int(length)


def pack(tokenizer, prompts: list[str], length: int) -> dict:
    """{"token_ids", "padding_mask"} (len(prompts), length), as keras_hub's StartEndPacker."""
    start = [] if tokenizer.start_token_id is None else [tokenizer.start_token_id]
    rows = [start + ids[:length - len(start)] for ids in tokenizer.tokenize(list(prompts))]
    pad = tokenizer.pad_token_id or 0
    token_ids = np.full((len(rows), length), pad, np.int32)
    mask = np.zeros((len(rows), length), bool)
    for i, row in enumerate(rows):
        token_ids[i, :len(row)] = row
        mask[i, :len(row)] = True
    return {"token_ids": token_ids, "padding_mask": mask}


def unpack(tokenizer, outputs: dict) -> list[str]:
    """The strings of generate()'s token ids: masked and special tokens left out."""
    token_ids, mask = outputs["token_ids"], outputs["padding_mask"]
    keep = mask & ~np.isin(token_ids, tokenizer.special_token_ids)
    return tokenizer.detokenize([row[kept] for row, kept in zip(token_ids, keep)])
