"""KerasHub's Llama, Llama 3, Mistral, Gemma and Gemma 2 causal LMs against keras_hub itself on
JAX: tiny random models (grouped-query attention, rotary embeddings with KerasHub's scaling
options, sliding windows shorter than the prompts, Gemma 2's soft-capping and post norms), saved
as a `.keras` file and as a preset; logits within 1e-4 for two prompts of different lengths,
the backbone's sequence output too, and greedy generation giving keras_hub's tokens."""
from __future__ import annotations

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from extras import KERAS_HUB_INSTALL, require

keras_hub = require("keras_hub", KERAS_HUB_INSTALL)

SIZES = dict(vocabulary_size=53, num_layers=2, num_query_heads=4, hidden_dim=16,
             intermediate_dim=32)
MODELS = {
    "llama": ("LlamaBackbone", "LlamaCausalLM", dict(num_key_value_heads=2)),
    "llama3": ("Llama3Backbone", "Llama3CausalLM", dict(
        num_key_value_heads=1, rope_frequency_adjustment_factor=8.0, rope_low_freq_factor=1.0,
        rope_high_freq_factor=4.0, rope_pretraining_sequence_length=64)),
    "mistral": ("MistralBackbone", "MistralCausalLM", dict(
        num_key_value_heads=2, sliding_window=3, rope_scaling_factor=2.0)),
    "gemma": ("GemmaBackbone", "GemmaCausalLM", dict(num_key_value_heads=1, head_dim=8)),
    "gemma2": ("GemmaBackbone", "GemmaCausalLM", dict(
        num_key_value_heads=2, head_dim=8, use_post_ffw_norm=True, use_post_attention_norm=True,
        attention_logit_soft_cap=5.0, final_logit_soft_cap=3.0,
        use_sliding_window_attention=True, sliding_window_size=3)),
}


def prompts(length=10):
    ids = np.zeros((2, length), np.int32)
    mask = np.zeros((2, length), bool)
    ids[0, :3], ids[1, :5] = [5, 6, 7], [11, 2, 31, 4, 45]
    mask[0, :3] = mask[1, :5] = True
    return {"token_ids": ids, "padding_mask": mask}


@pytest.fixture(scope="module", params=sorted(MODELS))
def saved(request, tmp_path_factory):
    backbone_class, task_class, options = MODELS[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    keras.utils.set_random_seed(11)
    backbone = getattr(keras_hub.models, backbone_class)(**SIZES, **options)
    randomize_weights(backbone, seed=4, low=-0.5, high=0.5)
    causal_lm = getattr(keras_hub.models, task_class)(backbone=backbone, preprocessor=None)
    causal_lm.compile(sampler="greedy")
    causal_lm.save(folder / "lm.keras")
    causal_lm.save_to_preset(str(folder / "preset"))
    return causal_lm, str(folder / "lm.keras"), str(folder / "preset")


def test_logits_and_sequence_output_match(saved):
    causal_lm, keras_file, preset = saved
    expected = np.asarray(causal_lm(prompts()))
    for path in (keras_file, preset):
        with kg.load_model(path) as model:
            assert_close(model.predict(prompts(), verbose=0), expected, what=path)
    with kg.kerashub.load(preset, task=False) as backbone:
        assert_close(backbone.predict(prompts(), verbose=0),
                     np.asarray(causal_lm.backbone(prompts())), what="backbone")
        for layer in causal_lm.backbone.layers:
            for mine, theirs in zip(backbone.get_layer(layer.name).get_weights(),
                                    layer.get_weights()):
                np.testing.assert_array_equal(mine, theirs, err_msg=layer.name)


def test_greedy_generation_gives_keras_hubs_tokens(saved):
    causal_lm, keras_file, _ = saved
    expected = causal_lm.generate(prompts(), stop_token_ids=None)
    hp = causal_lm.backbone.get_config()
    head_dim = hp.get("head_dim") or hp["hidden_dim"] // hp["num_query_heads"]
    if "sliding_window" in hp:                           # Mistral: every block's
        windows = {hp["sliding_window"]}
    else:                                                # Gemma 2: every other block's
        windows = {None, hp.get("sliding_window_size")
                   if hp.get("use_sliding_window_attention") else None}
    # The cache holds the key/value heads only (grouped-query attention), one 0 / 1 row of
    # slots per attention span (a sliding window's, everything's), and the 1 and 0 written.
    cache = 2 * 2 * (2 * 10 * hp["num_key_value_heads"] * head_dim) * 4 + len(windows) * 40 + 8
    with kg.load_model(keras_file) as model:
        before = kg.memory().num_bytes
        during = []
        got = model.generate(prompts(), stop_token_ids=None, sampler="greedy",
                             on_step=lambda ids, index: during.append(kg.memory().num_bytes))
        assert kg.memory().num_bytes == before
        assert {b - before for b in during} == {cache}
    np.testing.assert_array_equal(got["token_ids"], expected["token_ids"])
    np.testing.assert_array_equal(got["padding_mask"], expected["padding_mask"])
