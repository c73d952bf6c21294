"""ViT's own layers (keras_hub's vit_layers.py): the class token put before the patches, and
the encoder block.

ClassToken: keras_hub's ViTPatchingAndEmbedding keeps a learned (1, 1, hidden) vector that it
tiles over the batch and concatenates before the patch embeddings.
ViTEncoderBlock: a pre-norm transformer encoder block (layer_norm_1 -> MultiHeadAttention ->
residual, layer_norm_2 -> MLP with exact GELU -> residual), TransformerEncoder's computation
over the whole sequence with no padding mask, its weights where keras_hub's ViT keeps them.
"""
from __future__ import annotations

import numpy as np

from ..layers.base import Layer
from ..ops import merge, tile_repeat_pad
from ..tensors import ownership
from .transformer_encoder import TransformerEncoder

_MHA = ("mha",)
# Where each part of the block (transformer_block.py's parts) keeps its arrays in ViT's groups.
VIT_PART_WEIGHTS = {
    "attention": tuple((_MHA, (name, "_" + name)) for name in
                       ("query_dense", "key_dense", "value_dense", "output_dense")),
    "attention_norm": ((("layer_norm_1",),),),
    "feedforward_norm": ((("layer_norm_2",),),),
    "intermediate": ((("mlp",), ("dense_1",)),),
    "output": ((("mlp",), ("dense_2",)),),
}


class ClassToken(Layer):
    shaders = ("tile_repeat_pad.comp", "concat.comp")

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.expect_weights(1)
        self.dim = self.weights_np[0].shape[-1]

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] != self.dim:
            raise self.shape_error(f"expects (batch, patches, {self.dim}) inputs. Received "
                                   f"{tuple(input_shape)}.")
        patches = input_shape[1]
        return (input_shape[0], None if patches is None else patches + 1, self.dim)

    def build(self, input_shape):
        self.token = self.upload(np.asarray(self.weights_np[0], np.float32).reshape(1, 1, -1),
                                 name="class_token")
        self.built = True

    def call(self, inputs, **kwargs):
        return ownership.tidy.run(lambda: merge.concatenate(
            [tile_repeat_pad.tile(self.token, (inputs.shape[0], 1, 1)), inputs], axis=1))


class ViTEncoderBlock(TransformerEncoder):
    # Its arrays in TransformerEncoder's order (the attention's first), read from ViT's groups.
    @classmethod
    def weight_paths(cls, config):
        return tuple(path for part in cls.ORDER for path in VIT_PART_WEIGHTS[part])
