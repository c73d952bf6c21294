"""KerasHub's CausalLM task models: logits from predict, text from generate().

predict / `model(x)` give the logits for every position of the inputs (batch, length,
vocabulary), as keras_hub's CausalLM does. generate() continues prompts token by token
(generation.py) with the sampler set by compile(sampler=...), KerasHub's default "top_k", or
the one given to the call; string prompts go through the preset's tokenizer (preprocessor.py).
"""
from __future__ import annotations

from ..errors import InputTypeError
from . import generation, preprocessor, samplers
from .hub_model import HubModel


class HubCausalLM(HubModel):
    sampler: samplers.Sampler | None = None

    @property
    def end_token_ids(self) -> tuple:
        """The token ids that end a sequence: the tokenizer's end token (none without one)."""
        tokenizer = self.tokenizer
        return () if tokenizer is None else (tokenizer.end_token_id,)

    def decoder_stack(self) -> generation.DecoderStack:
        """The model's layers as generation uses them (each architecture's subclass)."""
        raise NotImplementedError

    def compile(self, sampler="top_k") -> None:
        """Choose generate()'s sampler as keras_hub's CausalLM.compile(sampler=...) does: a name
        ("greedy", "top_k", "top_p", "random") or a kerasgl.kerashub Sampler."""
        self.sampler = samplers.get(sampler)

    def generate(self, inputs, max_length=None, stop_token_ids="auto", strip_prompt=False,
                 sampler=None, on_step=None):
        """Continue a batch of prompts, as keras_hub's CausalLM.generate.

        inputs: {"token_ids": (batch, length) ints, "padding_mask": (batch, length)}, each row's
        prompt where its mask is true; `length` is the output's length, or `max_length` (the
        inputs padded to it). Or, for a preset saved with its tokenizer, a string or a list of
        strings, tokenized and packed to `max_length` (default: the preset preprocessor's
        sequence_length). stop_token_ids: None (generate to the end), token ids that end a
        sequence, or "auto" (the tokenizer's end token). strip_prompt: return only the
        completions. sampler: this call's, else compile()'s, else "top_k". on_step(token_ids,
        index) is called after each new token (token_ids: the batch so far, numpy).
        Returns {"token_ids": int32 array, "padding_mask": bool array}, or for strings the
        generated strings (a string for a string). The key/value cache lives on the GPU for the
        call only."""
        self._check_alive()
        chosen = samplers.get(sampler if sampler is not None else self.sampler or "top_k")
        text, single = preprocessor.is_text(inputs), isinstance(inputs, str)
        if text:
            tokenizer = self.tokenizer
            if tokenizer is None:
                raise InputTypeError("generate() on strings needs the model's tokenizer, and "
                                     "this model was saved without one (load a preset saved "
                                     "with its preprocessor, or pass token ids).")
            length = preprocessor.sequence_length(max_length, self.preprocessor)
            inputs = preprocessor.pack(tokenizer, [inputs] if single else inputs, length)
            max_length = None
        # The end token is read (the tokenizer loaded) only when asked for.
        end = self.end_token_ids if isinstance(stop_token_ids, str) else ()
        result = generation.generate(self.decoder_stack(), inputs, max_length, stop_token_ids,
                                     strip_prompt, chosen, end, on_step,
                                     self.activation_dtype)
        if not text:
            return result
        strings = preprocessor.unpack(tokenizer, result)
        return strings[0] if single else strings
