"""What keras_hub's TransformerEncoder and TransformerDecoder share: a self-attention and a
two-layer feed-forward, each in a residual branch with a layer normalisation.

    x = x + attention(norm(x))        normalize_first (GPT-2); else x = norm(x + attention(x))
    x = x + dense2(dense1(norm(x)))   normalize_first;         else x = norm(x + dense2(dense1(x)))

The attention takes the padding mask as KerasHub merges it: keys where it is 0 are not attended
(and, in a decoder, keys after the query: causal). Dropout is the identity at inference. The
two classes create their sub-layers in different orders, which is the order of their weights
(ORDER); everything else is here.
"""
from __future__ import annotations

from ..layers.attention.multi_head_attention import MultiHeadAttention
from ..ops import elementwise
from ..tensors import ownership
from ..tensors.tensor import Tensor, view
from .feedforward import dense_part
from .hub_layer import HubLayer

_ATTENTION = ("_self_attention_layer",)
# Where each part's arrays are in the weights file.
PART_WEIGHTS = {
    "attention": ((_ATTENTION, ("query_dense", "_query_dense")),
                  (_ATTENTION, ("key_dense", "_key_dense")),
                  (_ATTENTION, ("value_dense", "_value_dense")),
                  (_ATTENTION, ("output_dense", "_output_dense"))),
    "attention_norm": ((("_self_attention_layer_norm",),),),
    "intermediate": ((("_feedforward_intermediate_dense",),),),
    "output": ((("_feedforward_output_dense",),),),
    "feedforward_norm": ((("_feedforward_layer_norm",),),),
}


class TransformerBlock(HubLayer):
    ORDER: tuple = ()                     # the parts, in the order the Keras layer makes them
    attention_class = MultiHeadAttention
    attention_name = "self_attention"
    causal = False
    window = None                         # no sliding window: every cached slot is attended

    @classmethod
    def weight_paths(cls, config):
        return tuple(path for part in cls.ORDER for path in PART_WEIGHTS[part])

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        hidden, heads, head_dim = self.weights_np[0].shape     # the query kernel
        epsilon = float(self.option("layer_norm_epsilon", 1e-5))
        self.normalize_first = bool(self.option("normalize_first", False))
        self.hidden = hidden
        makers = {
            "attention": lambda: self.part(self.attention_class, self.attention_name, {
                "num_heads": heads, "key_dim": head_dim, "value_dim": head_dim,
                "dropout": float(self.option("dropout", 0.0)), "use_bias": True}, 8),
            "attention_norm": lambda: self.part("LayerNormalization", "self_attention_layer_norm",
                                                {"epsilon": epsilon}, 2),
            "intermediate": lambda: dense_part(self, "feedforward_intermediate_dense",
                                               int(self.option("intermediate_dim")),
                                               self.option("activation", "relu")),
            "output": lambda: dense_part(self, "feedforward_output_dense", hidden),
            "feedforward_norm": lambda: self.part("LayerNormalization", "feedforward_layer_norm",
                                                  {"epsilon": epsilon}, 2),
        }
        for name in self.ORDER:
            setattr(self, name, makers[name]())
        self.check_all_taken()

    def block_shape(self, sequence, padding_mask):
        if len(sequence) != 3 or sequence[-1] != self.hidden:
            raise self.shape_error(f"expects (batch, sequence, {self.hidden}) inputs. Received "
                                   f"{tuple(sequence)}.")
        if padding_mask is not None and len(padding_mask) != 2:
            raise self.shape_error(f"expects a (batch, sequence) padding mask. Received "
                                   f"{tuple(padding_mask)}.")
        return tuple(sequence)

    def build_parts(self, sequence) -> None:
        shape = tuple(sequence)
        self.attention.build(shape, shape)
        self.attention_norm.build(shape)
        self.intermediate.build(shape)
        self.output.build(shape[:-1] + (self.intermediate.units,))
        self.feedforward_norm.build(shape)
        self.finish_build()

    def run(self, sequence: Tensor, padding_mask: Tensor | None) -> Tensor:
        """The block on a whole sequence (predict)."""
        def attend(x):            # inside residual_branches' tidy scope: it frees `keys`
            if padding_mask is None:
                return self.attention.call(x, x, use_causal_mask=self.causal)
            batch, length = padding_mask.shape
            keys = view(padding_mask, (batch, 1, length))
            return self.attention.call(x, x, attention_mask=keys, use_causal_mask=self.causal)
        return ownership.tidy.run(self.residual_branches, sequence, attend)

    def residual_branches(self, x: Tensor, attend) -> Tensor:
        """The two residual branches around `attend(x)` (the self-attention as called)."""
        residual = x
        if self.normalize_first:
            x = self.attention_norm.call(x)
        x = elementwise.add(attend(x), residual)
        if not self.normalize_first:
            x = self.attention_norm.call(x)
        residual = x
        if self.normalize_first:
            x = self.feedforward_norm.call(x)
        x = self.output.call(self.intermediate.call(x))
        x = elementwise.add(x, residual)
        if not self.normalize_first:
            x = self.feedforward_norm.call(x)
        return x
