"""Text as it is generated: generate()'s on_step turned into the new characters of one prompt.

Each step the row's tokens so far (its prompt and what was generated, special tokens and those
after its first generated end token left out) are detokenized whole, and the characters beyond
those already written are written: decoding the whole row keeps byte-pair and SentencePiece
spacing as the final string has it. Text ending in an incomplete UTF-8 character (U+FFFD, a
byte-level token holding part of one) waits for the next token.
"""
from __future__ import annotations

import numpy as np

INCOMPLETE = "\ufffd"


class TextStream:
    """on_step for generate() on one prompt: writes its text as it grows (`write(str)`)."""

    def __init__(self, tokenizer, write):
        self.tokenizer, self.write = tokenizer, write
        self.written = ""
        self._prompt_length = None

    def _text(self, ids: np.ndarray) -> str:
        keep = ~np.isin(ids, self.tokenizer.special_token_ids)
        return self.tokenizer.detokenize([ids[keep]])[0]

    def __call__(self, token_ids: np.ndarray, index: int) -> None:
        row = token_ids[0, :index]
        if self._prompt_length is None:           # the first step follows the prompt's pass
            self._prompt_length = index - 1
        generated = row[self._prompt_length:]
        ended = np.flatnonzero(generated == self.tokenizer.end_token_id)
        if ended.size:
            row = row[:self._prompt_length + ended[0]]
        self._emit(self._text(row), final=False)

    def finish(self, text: str) -> None:
        """The call's result: whatever of it is not written yet."""
        self._emit(text, final=True)

    def _emit(self, text: str, final: bool) -> None:
        if not text.startswith(self.written) or (text.endswith(INCOMPLETE) and not final):
            return
        if len(text) > len(self.written):
            self.write(text[len(self.written):])
            self.written = text
