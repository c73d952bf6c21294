"""KerasHub presets' text side against keras_hub itself: tokenizers read from a preset's own
files, string prompts in generate(), and `kerasgl generate` on the command line.

Tokenizers are built with keras_hub's own classes from small vocabularies made here (byte-pair
merges, a WordPiece list, SentencePiece models trained on a few sentences, as keras_hub's tests
do), saved in a preset with a tiny random model by keras_hub's save_to_preset, and read back by
kerasgl without keras_hub: token ids must be keras_hub's, greedy generated text keras_hub's.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_ref import keras, randomize_weights

import kerasgl as kg
from kerasgl.kerashub.streaming import TextStream
from extras import KERAS_HUB_INSTALL, require

keras_hub = require("keras_hub", KERAS_HUB_INSTALL)
spm = require("sentencepiece")
require("tokenizers")

SENTENCES = ["The quick brown fox jumped.", "the fox, the dog  and 12345 ducks!",
             "Jumping over the brown dog\nagain", "héllo wörld ça va", "",
             "the end<|endoftext|>the [MASK] dog"]
TRAINING = ["the quick brown fox jumped over the lazy dog", "the fox and the dog are friends",
            "a quick dog jumps over a brown fox", "hello world, the ducks are here",
            "jumping foxes and lazy ducks", "over and over again the dog jumped"]


def byte_pair_vocabulary():
    """GPT-2's 256 byte symbols, merged into a few whole words (the merges of each word left
    to right), the end token first as GPT-2 has it last."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    vocabulary = {"<|endoftext|>": 0}
    for symbol in [chr(b) for b in printable] + [chr(256 + i) for i in range(len(others))]:
        vocabulary[symbol] = len(vocabulary)
    merges = []
    for word in ["Ġthe", "Ġquick", "Ġbrown", "Ġfox", "Ġdog", "ing", "Ġjump", "ed", "Ġ1", "23",
                 "The", "ĠĠ", "Ġand"]:
        piece = word[0]
        for char in word[1:]:
            merges.append(f"{piece} {char}")
            piece += char
            vocabulary.setdefault(piece, len(vocabulary))
    return vocabulary, merges


def sentence_piece_proto(**special) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(TRAINING), model_writer=model,
                                   vocab_size=60, model_type="bpe", hard_vocab_limit=False,
                                   minloglevel=2, **special)
    return model.getvalue()


def gemma_tokenizer():
    return keras_hub.models.GemmaTokenizer(proto=sentence_piece_proto(
        pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="<pad>", bos_piece="<bos>",
        eos_piece="<eos>", unk_piece="<unk>"))


@pytest.fixture(scope="module")
def presets(tmp_path_factory):
    """keras_hub task presets holding their tokenizers: {name: (keras_hub task, folder)}."""
    folder = tmp_path_factory.mktemp("text_presets")
    keras.utils.set_random_seed(5)
    made = {}

    vocabulary, merges = byte_pair_vocabulary()
    tokenizer = keras_hub.models.GPT2Tokenizer(vocabulary=vocabulary, merges=merges)
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=len(vocabulary), num_layers=1, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=32)
    made["gpt2"] = keras_hub.models.GPT2CausalLM(
        backbone=backbone, preprocessor=keras_hub.models.GPT2CausalLMPreprocessor(
            tokenizer=tokenizer, sequence_length=16))

    tokenizer = gemma_tokenizer()
    backbone = keras_hub.models.GemmaBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=1, num_query_heads=2,
        num_key_value_heads=1, hidden_dim=16, intermediate_dim=32, head_dim=8)
    made["gemma"] = keras_hub.models.GemmaCausalLM(
        backbone=backbone, preprocessor=keras_hub.models.GemmaCausalLMPreprocessor(
            tokenizer=tokenizer, sequence_length=16))

    words = sorted({w.strip(".,!") for s in TRAINING for w in s.lower().split()})
    tokenizer = keras_hub.models.BertTokenizer(
        vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "!", "1", "##2",
                    "##3", "##45", "##ing", "##ed", "##s", "jump"] + words, lowercase=True)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=1, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=32)
    made["bert"] = keras_hub.models.BertTextClassifier(
        backbone=backbone, num_classes=2,
        preprocessor=keras_hub.models.BertTextClassifierPreprocessor(tokenizer=tokenizer,
                                                                     sequence_length=16))
    result = {}
    for name, task in made.items():
        randomize_weights(task.backbone, seed=2, low=-0.5, high=0.5)
        task.save_to_preset(str(folder / name))
        result[name] = (task, str(folder / name))
    # Llama's SentencePiece tokenizer, saved alone (its preset holds no model).
    llama = keras_hub.models.LlamaTokenizer(proto=sentence_piece_proto(
        unk_id=0, bos_id=1, eos_id=2))
    llama.save_to_preset(str(folder / "llama_tokenizer"))
    result["llama_tokenizer"] = (llama, str(folder / "llama_tokenizer"))
    return result


def reference_ids(tokenizer, texts):
    return [np.asarray(tokenizer(text)).tolist() for text in texts]


@pytest.mark.parametrize("name", ["gpt2", "gemma", "bert"])
def test_preset_tokenizer_gives_keras_hub_ids(presets, name):
    task, folder = presets[name]
    expected = reference_ids(task.preprocessor.tokenizer, SENTENCES)
    with kg.load_model(folder) as model:
        tokenizer = model.tokenizer
        assert tokenizer.class_name == type(task.preprocessor.tokenizer).__name__
        assert tokenizer.tokenize(SENTENCES) == expected
        assert [tokenizer.tokenize(text) for text in SENTENCES] == expected
        reference = task.preprocessor.tokenizer
        assert (tokenizer.start_token_id, tokenizer.end_token_id, tokenizer.pad_token_id) == (
            reference.start_token_id, reference.end_token_id, reference.pad_token_id)
        assert tokenizer.special_token_ids == sorted(reference.special_token_ids)
        assert tokenizer.detokenize(expected[:4]) == [reference.detokenize(ids)
                                                      for ids in expected[:4]]
    assert any(len(ids) > 3 for ids in expected)       # the sentences were not all unknown


def test_sentence_piece_tokenizer_alone(presets):
    reference, folder = presets["llama_tokenizer"]
    tokenizer = kg.kerashub.load_tokenizer(folder)
    assert tokenizer.tokenize(SENTENCES) == reference_ids(reference, SENTENCES)
    assert (tokenizer.start_token_id, tokenizer.end_token_id) == (reference.start_token_id,
                                                                  reference.end_token_id)


def test_model_without_tokenizer(tmp_path):
    keras.utils.set_random_seed(1)
    backbone = keras_hub.models.GPT2Backbone(vocabulary_size=8, num_layers=1, num_heads=1,
                                             hidden_dim=4, intermediate_dim=8,
                                             max_sequence_length=8)
    backbone.save_to_preset(str(tmp_path / "bare"))
    with kg.load_model(str(tmp_path / "bare")) as model:
        assert model.tokenizer is None
    with pytest.raises(kg.errors.ModelFileError, match="no KerasHub tokenizer"):
        kg.kerashub.load_tokenizer(str(tmp_path / "bare"))


PROMPTS = ["the quick brown", "a dog"]


@pytest.mark.parametrize("name", ["gpt2", "gemma"])
def test_string_prompts_generate_keras_hub_text(presets, name):
    task, folder = presets[name]
    task.compile(sampler="greedy")
    with kg.load_model(folder) as model:
        before = kg.memory().num_bytes
        assert model.generate(PROMPTS, sampler="greedy") == task.generate(PROMPTS)
        assert kg.memory().num_bytes == before        # the cache went with the call
        assert model.generate(PROMPTS[0], max_length=10, sampler="greedy") == \
            task.generate(PROMPTS[0], max_length=10)
        # Every token to the end (no stop token), completions alone.
        expected = task.generate(PROMPTS, stop_token_ids=None, strip_prompt=True)
        assert model.generate(PROMPTS, stop_token_ids=None, strip_prompt=True,
                              sampler="greedy") == expected
        assert any(text for text in expected)
        # The auto stop token is the tokenizer's end token, for token-id inputs too.
        assert model.end_token_ids == (task.preprocessor.tokenizer.end_token_id,)


def test_string_prompts_need_a_tokenizer(presets, tmp_path):
    task, _ = presets["gpt2"]
    task.save(tmp_path / "lm.keras")           # a .keras file: kerasgl reads no tokenizer there
    with kg.load_model(str(tmp_path / "lm.keras")) as model:
        with pytest.raises(kg.errors.InputTypeError, match="tokenizer"):
            model.generate("the quick", sampler="greedy")
        with pytest.raises(kg.errors.InputValueError, match="tokenizer's end token"):
            model.generate({"token_ids": np.ones((1, 4), np.int32),
                            "padding_mask": np.ones((1, 4), bool)})


def kerasgl_command(*args):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "kerasgl", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_generate_command(presets):
    task, folder = presets["gpt2"]
    task.compile(sampler="greedy")
    expected = task.generate(PROMPTS[0], max_length=12)
    result = kerasgl_command("generate", folder, PROMPTS[0], "--max-length", "12",
                             "--sampler", "greedy")
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected + "\n"
    # Seeded draws: the same seed, the same text.
    seeded = [kerasgl_command("generate", folder, PROMPTS[1], "--max-length", "10",
                              "--sampler", "top_k", "--seed", "3").stdout for _ in range(2)]
    assert seeded[0] == seeded[1] and seeded[0].startswith(PROMPTS[1])
    result = kerasgl_command("generate", str(folder) + "_missing", "hello")
    assert result.returncode == 1 and result.stderr.startswith("kerasgl generate: ")


def test_text_streams_token_by_token(presets):
    task, folder = presets["gemma"]
    written = []
    with kg.load_model(folder) as model:
        stream = TextStream(model.tokenizer, written.append)
        text = model.generate(PROMPTS[0], max_length=16, sampler="greedy",
                              stop_token_ids=None, on_step=stream)
        assert len(written) > 2        # during generation: the prompt, then tokens as they came
        stream.finish(text)
    assert "".join(written) == text


@pytest.mark.parametrize("name, library", [("gpt2", "tokenizers"), ("gemma", "sentencepiece")])
def test_missing_library_names_the_extra(presets, monkeypatch, name, library):
    # A None entry in sys.modules is how Python marks a module as not importable.
    monkeypatch.setitem(sys.modules, library, None)
    with pytest.raises(ImportError, match=r"kerasgl\[kerashub\]"):
        kg.kerashub.load_tokenizer(presets[name][1])


@pytest.mark.parametrize("options", [dict(lowercase=True, special_tokens_in_strings=True),
                                     dict(strip_accents=True),
                                     dict(lowercase=True, strip_accents=True)])
def test_word_piece_options(tmp_path, options):
    # CJK characters, a zero-width space (a word separator), accents, a repeated token (its
    # last id, as keras_hub's), special tokens in the text.
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "!", "the", "dog",
                  "hello", "##s", "cafe", "中", "国", "ca", "##fe", "the"]
    texts = ["[CLS] The dogs [MASK], café! 中国 hello[SEP]", "Café  THE\tdog\u200bs",
             "héllo ÉTÉ straße"]
    reference = keras_hub.models.BertTokenizer(vocabulary=vocabulary, **options)
    reference.save_to_preset(str(tmp_path / "bert_tokenizer"))
    tokenizer = kg.kerashub.load_tokenizer(str(tmp_path / "bert_tokenizer"))
    expected = reference_ids(reference, texts)
    assert tokenizer.tokenize(texts) == expected
    assert tokenizer.detokenize(expected) == [reference.detokenize(ids) for ids in expected]
