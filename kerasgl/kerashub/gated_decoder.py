"""The decoder blocks of KerasHub's Llama, Mistral (LlamaTransformerDecoder,
MistralTransformerDecoder) and Gemma (GemmaDecoderBlock), pre-normalised with RMS norms:

    x = x + [post_attention_norm](attention(attention_norm(x)))
    x = x + [post_ffw_norm](down(activation(gate(h)) * up(h))),  h = ffw_norm(x)

activation: silu (Llama, Mistral) or the tanh GELU (Gemma); the post norms are Gemma 2's. The
attention is rotary_attention.py's. Each Keras class makes its sub-layers in its own order, the
order of its weights (LAYOUTS, by the `layout` config: "llama" or "gemma"); norm_offset is
Gemma's 1 + scale.
"""
from __future__ import annotations

from ..ops import elementwise
from ..tensors import ownership
from ..tensors.tensor import Tensor
from .feedforward import dense_part
from .hub_layer import HubLayer
from .rms_norm import ScaledRMSNorm
from .rotary_attention import RotaryAttention

_LLAMA_ATTENTION = ("_self_attention_layer",)
_GEMMA_ATTENTION = ("attention",)


def _projections(attention):
    return tuple((attention, (f"_{name}_dense", f"{name}_dense"))
                 for name in ("query", "key", "value", "output"))


# (part, where its arrays are), in each Keras class's get_weights() order.
LAYOUTS = {
    "llama": (("attention", _projections(_LLAMA_ATTENTION)),
              ("attention_norm", ((("_self_attention_layernorm",),),)),
              ("up", ((("_feedforward_intermediate_dense",),),)),
              ("gate", ((("_feedforward_gate_dense",),),)),
              ("down", ((("_feedforward_output_dense",),),)),
              ("ffw_norm", ((("_feedforward_layernorm",),),))),
    "gemma": (("attention_norm", ((("pre_attention_norm",),),)),
              ("post_attention_norm", ((("post_attention_norm",),),)),
              ("attention", _projections(_GEMMA_ATTENTION)),
              ("ffw_norm", ((("pre_ffw_norm",),),)),
              ("post_ffw_norm", ((("post_ffw_norm",),),)),
              ("gate", ((("gating_ffw",),),)),
              ("up", ((("gating_ffw_2",),),)),
              ("down", ((("ffw_linear",),),))),
}
OPTIONAL = ("post_attention_norm", "post_ffw_norm")


class GatedDecoder(HubLayer):
    @classmethod
    def parts_of(cls, config) -> list:
        return [(part, paths) for part, paths in LAYOUTS[config.get("layout", "llama")]
                if part not in OPTIONAL or config.get(part)]

    @classmethod
    def weight_paths(cls, config):
        return tuple(path for _, paths in cls.parts_of(config) for path in paths)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.post_attention_norm = self.post_ffw_norm = None
        for part, _ in self.parts_of(self.config):
            setattr(self, part, self._make(part))
        self.check_all_taken()
        self.window = self.attention.window

    def _make(self, part: str):
        intermediate = int(self.option("intermediate_dim"))
        if part == "attention":
            return self.part(RotaryAttention, "attention", self.option("attention"), 4)
        if part == "gate":
            return dense_part(self, "gate", intermediate, self.option("activation"), bias=False)
        if part == "up":
            return dense_part(self, "up", intermediate, bias=False)
        if part == "down":       # made after the attention in both orders: its width is known
            return dense_part(self, "down", self.attention.hidden, bias=False)
        return self.part(ScaledRMSNorm, part, {
            "epsilon": float(self.option("layer_norm_epsilon", 1e-6)),
            "offset": float(self.option("norm_offset", 0.0))}, 1)

    def compute_output_shape(self, x, decoder_padding_mask=None, padding_mask=None):
        mask = padding_mask if decoder_padding_mask is None else decoder_padding_mask
        hidden = self.attention.hidden
        if len(x) != 3 or x[-1] != hidden or (mask is not None and len(mask) != 2):
            raise self.shape_error(f"expects (batch, sequence, {hidden}) inputs and a (batch, "
                                   f"sequence) padding mask. Received {tuple(x)} and "
                                   f"{None if mask is None else tuple(mask)}.")
        return tuple(x)

    def build(self, x, decoder_padding_mask=None, padding_mask=None):
        shape = tuple(x)
        for part in (self.attention_norm, self.attention, self.post_attention_norm,
                     self.ffw_norm, self.gate, self.up, self.post_ffw_norm):
            if part is not None:
                part.build(shape)
        self.down.build(shape[:-1] + (self.gate.units,))
        self.finish_build()

    def call(self, x, decoder_padding_mask=None, padding_mask=None, **kwargs):
        mask = padding_mask if decoder_padding_mask is None else decoder_padding_mask
        return ownership.tidy.run(self.residual_branches, x,
                                  lambda h: self.attention.call(h, mask))

    def call_with_cache(self, x: Tensor, key_cache: Tensor, value_cache: Tensor, start: int,
                        valid: Tensor | None) -> Tensor:
        """The block on tokens at positions start.. (generation; rotary_attention.py)."""
        return ownership.tidy.run(self.residual_branches, x, lambda h: (
            self.attention.call_with_cache(h, key_cache, value_cache, start, valid)))

    def residual_branches(self, x: Tensor, attend) -> Tensor:
        attended = attend(self.attention_norm.call(x))
        if self.post_attention_norm is not None:
            attended = self.post_attention_norm.call(attended)
        x = elementwise.add(x, attended)
        h = self.ffw_norm.call(x)
        h = self.down.call(elementwise.mul(self.gate.call(h), self.up.call(h)))
        if self.post_ffw_norm is not None:
            h = self.post_ffw_norm.call(h)
        return elementwise.add(x, h)
