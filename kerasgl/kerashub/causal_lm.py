"""KerasHub's CausalLM task models: logits from predict, text from generate().

predict / `model(x)` give the logits for every position of the inputs (batch, length,
vocabulary), as keras_hub's CausalLM does. generate() continues prompts token by token
(generation.py) with the sampler set by compile(sampler=...), KerasHub's default "top_k", or
the one given to the call.
"""
from __future__ import annotations

from . import generation, samplers
from .hub_model import HubModel


class HubCausalLM(HubModel):
    sampler: samplers.Sampler | None = None
    # Token ids that end a sequence, from the model's tokenizer when it has one.
    end_token_ids: tuple = ()

    def decoder_stack(self) -> generation.DecoderStack:
        """The model's layers as generation uses them (each architecture's subclass)."""
        raise NotImplementedError

    def compile(self, sampler="top_k") -> None:
        """Choose generate()'s sampler as keras_hub's CausalLM.compile(sampler=...) does: a name
        ("greedy", "top_k", "top_p", "random") or a kerasgl.kerashub Sampler."""
        self.sampler = samplers.get(sampler)

    def generate(self, inputs, max_length=None, stop_token_ids="auto", strip_prompt=False,
                 sampler=None, on_step=None) -> dict:
        """Continue a batch of prompts, as keras_hub's CausalLM.generate on token ids.

        inputs: {"token_ids": (batch, length) ints, "padding_mask": (batch, length)}, each row's
        prompt where its mask is true; `length` is the output's length, or `max_length` (the
        inputs padded to it). stop_token_ids: None (generate to the end), token ids that end a
        sequence, or "auto" (the tokenizer's end token). strip_prompt: return only the
        completions. sampler: this call's, else compile()'s, else "top_k". on_step(token_ids,
        index) is called after each new token (token_ids: the batch so far, numpy).
        Returns {"token_ids": int32 array, "padding_mask": bool array}. The key/value cache
        lives on the GPU for the call only."""
        self._check_alive()
        chosen = samplers.get(sampler if sampler is not None else self.sampler or "top_k")
        return generation.generate(self.decoder_stack(), inputs, max_length, stop_token_ids,
                                   strip_prompt, chosen, self.end_token_ids, on_step)
