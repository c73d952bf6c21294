"""KerasHub's GPT-2 (backbone and causal LM) against keras_hub itself on JAX.

Tiny random models are built with keras_hub's own classes, offline, saved as `.keras` files and
as presets (whole and sharded), and loaded by kg.load_model. Outputs must match keras_hub's
within 1e-4 for a batch of two prompts of different lengths; greedy generation must give the
same tokens; the key/value cache lives on the GPU for the call only.
"""
from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl.ops.rows_write import write_rows
from extras import KERAS_HUB_INSTALL, require

keras_hub = require("keras_hub", KERAS_HUB_INSTALL)

LENGTH = 12
CONFIG = dict(vocabulary_size=61, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
              max_sequence_length=24)


def prompts(length=LENGTH):
    """Two prompts of 3 and 5 tokens, padded to `length`."""
    ids = np.zeros((2, length), np.int32)
    mask = np.zeros((2, length), bool)
    ids[0, :3], ids[1, :5] = [5, 6, 7], [11, 2, 31, 4, 45]
    mask[0, :3] = mask[1, :5] = True
    return {"token_ids": ids, "padding_mask": mask}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The reference model and its files: .keras (backbone, task), presets (task, sharded)."""
    folder = tmp_path_factory.mktemp("gpt2")
    keras.utils.set_random_seed(7)
    backbone = keras_hub.models.GPT2Backbone(**CONFIG)
    randomize_weights(backbone, seed=3, low=-0.5, high=0.5)
    causal_lm = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    causal_lm.compile(sampler="greedy")
    paths = {"backbone.keras": folder / "backbone.keras", "lm.keras": folder / "lm.keras",
             "lm_preset": folder / "lm_preset", "sharded": folder / "sharded"}
    backbone.save(paths["backbone.keras"])
    causal_lm.save(paths["lm.keras"])
    causal_lm.save_to_preset(str(paths["lm_preset"]))
    backbone.save_to_preset(str(paths["sharded"]), max_shard_size=0.00001)
    return causal_lm, {k: str(v) for k, v in paths.items()}


def test_backbone_matches_keras_hub(saved):
    causal_lm, paths = saved
    inputs = prompts()
    expected = np.asarray(causal_lm.backbone(inputs))
    assert os.path.isfile(os.path.join(paths["sharded"], "model.weights.json"))
    for form in ("backbone.keras", "sharded"):
        with kg.load_model(paths[form]) as model:
            assert model.hub_class == "GPT2Backbone"
            assert_close(model.predict(inputs, verbose=0), expected, what=form)
    # A task preset loads as its backbone when asked.
    with kg.kerashub.load(paths["lm_preset"], task=False) as model:
        assert_close(model.predict(inputs, verbose=0), expected, what="preset backbone")


def test_causal_lm_logits_match_keras_hub(saved):
    causal_lm, paths = saved
    inputs = prompts()
    expected = np.asarray(causal_lm(inputs))
    for form in ("lm.keras", "lm_preset"):
        with kg.load_model(paths[form]) as model:
            assert isinstance(model, kg.kerashub.HubCausalLM)
            assert_close(model.predict(inputs, verbose=0), expected, what=form)
            with kg.tidy():       # tensors in, tensors out
                logits = model(inputs)
                assert logits.shape == expected.shape


def test_layers_weights_and_summary_are_keras_hubs(saved):
    causal_lm, paths = saved
    with kg.load_model(paths["lm.keras"]) as model:
        assert model.count_params() == causal_lm.count_params()
        for layer in causal_lm.backbone.layers:
            for mine, theirs in zip(model.get_layer(layer.name).get_weights(),
                                    layer.get_weights()):
                np.testing.assert_array_equal(mine, theirs, err_msg=layer.name)
        lines = []
        model.summary(print_fn=lines.append)
        assert "transformer_layer_1" in lines[0] and "(TransformerDecoder)" in lines[0]


def test_greedy_generation_gives_keras_hubs_tokens(saved):
    causal_lm, paths = saved
    inputs = prompts()
    stop = None
    with kg.load_model(paths["lm_preset"]) as model:
        for kwargs in ({"stop_token_ids": None}, {"stop_token_ids": None, "strip_prompt": True}):
            expected = causal_lm.generate(prompts(), **kwargs)
            got = model.generate(prompts(), sampler="greedy", **kwargs)
            for key in ("token_ids", "padding_mask"):
                np.testing.assert_array_equal(got[key], expected[key], err_msg=f"{kwargs} {key}")
            if stop is None:
                stop = (int(expected["token_ids"][1, 7]),)
        # A stop token: generation ends once both rows generated one; the mask ends after it.
        expected = causal_lm.generate(prompts(), stop_token_ids=stop)
        model.compile(sampler="greedy")
        got = model.generate(inputs, stop_token_ids=stop)
        for key in ("token_ids", "padding_mask"):
            np.testing.assert_array_equal(got[key], expected[key], err_msg=f"stop {key}")


def test_activation_dtype_float16_runs_predict_and_generate_on_halves(saved):
    """load_model(preset, activation_dtype="float16"): predict's logits are halves (every value
    exactly a float16) within a few spacings of halves of keras_hub's float32 logits (Keras's
    layer-by-layer emulation cannot walk a KerasHub task model: the bound is measured, 1.73
    spacings where stores round to nearest, 2.49 where they truncate (the plain policy on
    llvmpipe): the logits' own rounding, half a spacing, plus what the blocks' roundings carry
    to them; allowed 3 and 8, model_ulps()'s margins); generate keeps the decoder's tensors as halves too
    (its steps' logits are halves, its kernels read and write textures of halves), gives
    keras_hub's greedy tokens on this model, and frees everything it made."""
    from half_activation_ref import is_half, model_ulps, spacings_off
    causal_lm, paths = saved
    inputs = prompts()
    expected = np.asarray(causal_lm(inputs))

    class Watching(kg.kerashub.GreedySampler):
        def next_tokens(self, logits):
            seen.append(logits.numpy())
            return super().next_tokens(logits)
    with kg.load_model(paths["lm_preset"], activation_dtype="float16") as model:
        assert model.activation_dtype == "float16"
        logits = model.predict(inputs, verbose=0)
        assert is_half(logits) and not is_half(expected)
        assert spacings_off(logits, expected) <= (3 if model_ulps() == 2 else 8)
        seen = []
        before = kg.memory()
        with kg.profile() as profiled:
            got = model.generate(prompts(), stop_token_ids=None, sampler=Watching())
        assert kg.memory().num_bytes == before.num_bytes
        assert len(seen) == LENGTH - 3 and all(is_half(step) for step in seen)
        assert any("HALF_TEXTURE" in event.kernel for event in profiled.events
                   if getattr(event, "kernel", None))
    wanted = causal_lm.generate(prompts(), stop_token_ids=None)
    np.testing.assert_array_equal(got["token_ids"], wanted["token_ids"])


def test_the_cache_lives_on_the_gpu_for_the_call_only(saved):
    _, paths = saved
    with kg.load_model(paths["lm.keras"]) as model:
        before = kg.memory()
        during = []
        model.generate(prompts(), stop_token_ids=None, sampler="greedy",
                       on_step=lambda ids, index: during.append(kg.memory().num_bytes))
        after = kg.memory()

        def interrupt(ids, index):
            raise KeyboardInterrupt
        with pytest.raises(KeyboardInterrupt):       # an interrupted call frees its cache too
            model.generate(prompts(), stop_token_ids=None, on_step=interrupt)
        assert kg.memory().num_bytes == before.num_bytes
    # keys and values of 2 layers, (batch 2, 12 slots, 2 heads, 8 dims), the slots' 0 / 1 row
    # and the 1 and 0 written into it: allocated once, the same bytes at every step.
    cache = 2 * 2 * (2 * LENGTH * 2 * 8) * 4 + LENGTH * 4 + 2 * 4
    assert len(during) == LENGTH - 3 and min(during) == max(during)
    assert during[0] - before.num_bytes == cache
    assert after.num_bytes == before.num_bytes and after.num_tensors == before.num_tensors


def test_seeded_samplers_are_reproducible(saved):
    _, paths = saved
    samplers = kg.kerashub
    with kg.load_model(paths["lm.keras"]) as model:
        for make in (lambda s: samplers.TopKSampler(k=5, seed=s),
                     lambda s: samplers.TopPSampler(p=0.5, seed=s, temperature=0.7),
                     lambda s: samplers.RandomSampler(seed=s)):
            first = model.generate(prompts(), stop_token_ids=None, sampler=make(1))
            again = model.generate(prompts(), stop_token_ids=None, sampler=make(1))
            np.testing.assert_array_equal(first["token_ids"], again["token_ids"])
            assert (first["token_ids"][:, :3] == prompts()["token_ids"][:, :3]).all()


def test_max_length_pads_the_prompts(saved):
    _, paths = saved
    with kg.load_model(paths["lm.keras"]) as model:
        padded = model.generate(prompts(8), max_length=LENGTH, stop_token_ids=None,
                                sampler="greedy")
        full = model.generate(prompts(), stop_token_ids=None, sampler="greedy")
    np.testing.assert_array_equal(padded["token_ids"], full["token_ids"])


def test_generation_refuses_what_it_cannot_honour(saved):
    _, paths = saved
    with kg.load_model(paths["lm.keras"]) as model:
        with pytest.raises(kg.InputValueError, match="no tokenizer"):
            model.generate(prompts())                       # stop_token_ids="auto"
        with pytest.raises(kg.InputValueError, match="beam"):
            model.generate(prompts(), stop_token_ids=None, sampler="beam")
        with pytest.raises(kg.InputValueError, match="vocabulary"):
            bad = prompts()
            bad["token_ids"][0, 0] = CONFIG["vocabulary_size"]
            model.generate(bad, stop_token_ids=None)
        with pytest.raises(kg.InputValueError, match="max_sequence_length"):
            model.generate(prompts(CONFIG["max_sequence_length"] + 1), stop_token_ids=None)
        with pytest.raises(kg.InputTypeError):
            model.generate("a prompt", stop_token_ids=None)


def _rewritten(source, target, change):
    """A copy of a .keras archive whose config.json went through `change`."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for item in old.infolist():
            data = old.read(item.filename)
            if item.filename == "config.json":
                data = json.dumps(change(json.loads(data))).encode()
            new.writestr(item, data)
    return str(target)


def test_keras_nlp_names_load_and_unknown_options_are_refused(saved, tmp_path):
    causal_lm, paths = saved

    def renamed(config):
        config["registered_name"] = "keras_nlp>GPT2Backbone"
        config["module"] = "keras_nlp.src.models.gpt2.gpt2_backbone"
        return config
    with kg.load_model(_rewritten(paths["backbone.keras"], tmp_path / "nlp.keras",
                                  renamed)) as model:
        assert_close(model.predict(prompts(), verbose=0),
                     np.asarray(causal_lm.backbone(prompts())), what="keras_nlp name")

    def unknown(config):
        config["registered_name"] = "keras_hub>OPTBackbone"
        return config
    with pytest.raises(kg.UnsupportedLayerError, match="OPTBackbone"):
        kg.load_model(_rewritten(paths["backbone.keras"], tmp_path / "opt.keras", unknown))

    def half(config):
        config["config"]["dtype"] = "bfloat16"
        return config
    with pytest.raises(kg.UnsupportedLayerError, match="bfloat16"):
        kg.load_model(_rewritten(paths["backbone.keras"], tmp_path / "bf16.keras", half))


def test_write_rows_writes_in_place():
    with kg.tidy():
        cache = kg.zeros([2, 5, 3])
        rows = kg.tensor(np.arange(12, dtype=np.float32).reshape(2, 2, 3))
        write_rows(cache, rows, 2)
        expected = np.zeros((2, 5, 3), np.float32)
        expected[:, 2:4] = np.arange(12).reshape(2, 2, 3)
        np.testing.assert_array_equal(cache.numpy(), expected)
        with pytest.raises(kg.ShapeError):
            write_rows(cache, rows, 4)
