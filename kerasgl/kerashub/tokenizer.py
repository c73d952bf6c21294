"""A KerasHub preset's tokenizer, read from the preset's own files, giving keras_hub's token ids.

A preset saved with a tokenizer holds `tokenizer.json` (the tokenizer's class and options) and
its vocabulary under `assets/tokenizer/`:
- GPT2Tokenizer: byte-pair, `vocabulary.json` + `merges.txt`;
- BertTokenizer: WordPiece, `vocabulary.txt`;
- GemmaTokenizer, LlamaTokenizer, MistralTokenizer: SentencePiece, `vocabulary.spm`.
Each is built with the library keras_hub itself uses outside TensorFlow (`tokenizers` for
byte-pair and WordPiece, `sentencepiece`), configured as keras_hub 0.32 configures it, so the
ids are keras_hub's. The libraries are the optional `kerashub` extra, imported only here.

One keras_hub detail is kept on purpose: its byte-pair tokenizer hands its word-splitting
pattern to `tokenizers` as a plain string, which `tokenizers` matches literally, so keras_hub
does not split words before the merges (a merge may join across a space). kerasgl does the
same, to give keras_hub's ids.
"""
from __future__ import annotations

import os

from ..errors import InputTypeError, KerasGLError, ModelFileError, UnsupportedLayerError
from ..saving.json_text import parse_config_json
from ..saving.limits import MAX_CONFIG_BYTES, readable_size
from .files import TOKENIZER_FILE, hub_class, hyperparameters

ASSETS = os.path.join("assets", "tokenizer")
MAX_ASSET_BYTES = 256 << 20        # far above real vocabularies (Gemma's SentencePiece: 4 MiB)

# keras_hub's Python-path split pattern, passed as a plain string (see the module doc).
BPE_SPLIT_PATTERN = (
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
# keras_hub's WordPiece splitting (word_piece_tokenizer.py's PY_* patterns): whitespace and
# control characters separate words; punctuation and CJK characters are words of their own.
WORDPIECE_WHITESPACE = r"[ \t\n\r\f]|\p{Cc}|\p{Cf}"
WORDPIECE_PUNCTUATION = r"[!-/]|[:-@]|[\[-`]|[{-~]|[\p{P}]"
WORDPIECE_CJK = (r"[\x{4E00}-\x{9FFF}]|[\x{3400}-\x{4DBF}]|[\x{20000}-\x{2A6DF}]|"
                 r"[\x{2A700}-\x{2B73F}]|[\x{2B740}-\x{2B81F}]|[\x{2B820}-\x{2CEAF}]|"
                 r"[\x{F900}-\x{FAFF}]|[\x{2F800}-\x{2FA1F}]")
MAX_CHARS_PER_WORD = 100           # keras_hub's MAX_BYTES_PER_WORD (bytes there: ASCII agrees)

# Per keras_hub class: the algorithm, its start, end and padding tokens (an int: a fixed id, as
# GPT-2's and Llama's padding id 0), and its other special tokens.
CLASSES = {
    "GPT2Tokenizer": ("bpe", "<|endoftext|>", "<|endoftext|>", 0, ()),
    "BertTokenizer": ("wordpiece", "[CLS]", "[SEP]", "[PAD]", ("[MASK]",)),
    "GemmaTokenizer": ("sentencepiece", "<bos>", "<eos>", "<pad>", ()),
    "LlamaTokenizer": ("sentencepiece", "<s>", "</s>", 0, ()),
    "MistralTokenizer": ("sentencepiece", "<s>", "</s>", 0, ()),
}
EXTRA = "pip install 'kerasgl[kerashub]' (or pip install tokenizers sentencepiece)"


class TokenizerLibraryError(KerasGLError, ImportError):
    """A tokenizer's library (the kerashub extra) is not installed."""


def _library(name: str, what: str):
    try:
        return __import__(name)
    except ImportError as exc:
        raise TokenizerLibraryError(f"{what} needs the {name!r} library, part of kerasgl's "
                                    f"kerashub extra: {EXTRA}.") from exc


class Tokenizer:
    """Strings to token ids and back, as the keras_hub tokenizer of `class_name` does.

    tokenize("text") -> [ids], tokenize(["a", "bc"]) -> [[ids], [ids]]; detokenize inverts it
    (special tokens included, as keras_hub's). start/end/pad_token_id and special_token_ids are
    keras_hub's attributes of the same names."""

    def __init__(self, class_name: str, encode, decode, vocabulary: dict):
        self.class_name = class_name
        self._encode, self._decode = encode, decode
        self.vocabulary_size = len(vocabulary)
        start, end, pad = (_token_id(vocabulary, token, class_name)
                           for token in CLASSES[class_name][1:4])
        self.start_token_id, self.end_token_id, self.pad_token_id = start, end, pad
        # keras_hub's special_token_ids: the ids of its named special tokens (not a numeric pad).
        self.special_token_ids = sorted({_token_id(vocabulary, token, class_name)
                                         for token in special_tokens(class_name)})

    def tokenize(self, texts):
        batch = _strings(texts)
        ids = self._encode(batch)
        return ids if isinstance(texts, (list, tuple)) else ids[0]

    def detokenize(self, ids):
        """A string for one row of ids, a list of strings for a list of rows."""
        rows = [list(ids)] if _is_row(ids) else [list(row) for row in ids]
        strings = self._decode([[int(i) for i in row] for row in rows])
        return strings[0] if _is_row(ids) else strings

    def __repr__(self) -> str:
        return f"<kerasgl KerasHub {self.class_name}, {self.vocabulary_size} tokens>"


def special_tokens(class_name: str) -> list[str]:
    """The named special tokens of a keras_hub tokenizer class."""
    start, end, pad, others = CLASSES[class_name][1:]
    return [t for t in (start, end, pad, *others) if isinstance(t, str)]


def _is_row(ids) -> bool:
    """A sequence of ids (not of rows): empty, or numbers inside."""
    ids = list(ids)
    return not ids or not hasattr(ids[0], "__len__")


def _strings(texts) -> list[str]:
    batch = list(texts) if isinstance(texts, (list, tuple)) else [texts]
    if not all(isinstance(text, str) for text in batch):
        raise InputTypeError("A tokenizer takes a string or a list of strings.")
    return batch


def _token_id(vocabulary: dict, token, class_name: str):
    if token is None or isinstance(token, int):
        return token
    if token not in vocabulary:
        raise ModelFileError(f"the {class_name} vocabulary has no {token!r} token")
    return vocabulary[token]


def config_of(folder: str) -> dict | None:
    """The preset's saved tokenizer config (tokenizer.json), or None when it has none."""
    path = os.path.join(folder, TOKENIZER_FILE)
    if not os.path.isfile(path):
        return None
    config = parse_config_json(_asset_bytes(path, MAX_CONFIG_BYTES), path, TOKENIZER_FILE)
    if hub_class(config) is None:
        raise ModelFileError(f"{path}: not a KerasHub tokenizer")
    return config


def _asset_bytes(path: str, limit: int = MAX_ASSET_BYTES) -> bytes:
    if not os.path.isfile(path):
        raise ModelFileError(f"{path}: missing, or not a regular file (the tokenizer's asset)")
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ModelFileError(f"{path}: larger than the {readable_size(limit)} a tokenizer's "
                             "file may be")
    return data


def _asset_text(folder: str, name: str) -> str:
    path = os.path.join(folder, ASSETS, name)
    try:
        return _asset_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"{path}: not UTF-8 text: {exc}") from exc


def read(folder: str) -> Tokenizer | None:
    """The tokenizer of the preset in `folder`, or None when it was saved without one."""
    config = config_of(folder)
    if config is None:
        return None
    class_name = hub_class(config)
    if class_name not in CLASSES:
        raise UnsupportedLayerError(f"{folder}: the KerasHub tokenizer {class_name} is not "
                                    f"supported; kerasgl reads {', '.join(sorted(CLASSES))}.")
    kind = CLASSES[class_name][0]
    options = hyperparameters(config, folder)
    if options.get("sequence_length"):
        raise UnsupportedLayerError(f"{folder}: a {class_name} with its own sequence_length is "
                                    "not supported.")
    build = {"bpe": _byte_pair, "wordpiece": _word_piece, "sentencepiece": _sentence_piece}[kind]
    encode, decode, vocabulary = build(folder, options, class_name)
    return Tokenizer(class_name, encode, decode, vocabulary)


def _byte_pair(folder: str, options: dict, class_name: str):
    """keras_hub's BytePairTokenizer._set_vocabulary_and_merges_tokenizers."""
    lib = _library("tokenizers", f"The {class_name}")
    vocabulary = parse_config_json(_asset_text(folder, "vocabulary.json"),
                                   os.path.join(folder, ASSETS), "vocabulary.json")
    if not isinstance(vocabulary, dict) or not all(
            isinstance(k, str) and type(v) is int for k, v in vocabulary.items()):
        raise ModelFileError(f"{folder}: vocabulary.json does not map tokens to ids")
    merges = []
    for line in _asset_text(folder, "merges.txt").splitlines():
        line = line.rstrip()
        if not line or "#version:" in line:
            continue
        pair = line.split(" ")
        if len(pair) != 2 or pair[0] not in vocabulary or pair[1] not in vocabulary:
            raise ModelFileError(f"{folder}: the merge rule {line!r} does not join two tokens "
                                 "of the vocabulary")
        merges.append(tuple(pair))
    tokenizer = lib.Tokenizer(lib.models.BPE(vocab=vocabulary, merges=merges))
    unsplittable = options.get("unsplittable_tokens") or [CLASSES[class_name][1]]
    tokenizer.add_special_tokens(list(unsplittable))
    tokenizer.pre_tokenizer = lib.pre_tokenizers.Sequence([
        lib.pre_tokenizers.Split(pattern=BPE_SPLIT_PATTERN, behavior="isolated"),
        lib.pre_tokenizers.ByteLevel(add_prefix_space=bool(options.get("add_prefix_space")),
                                     use_regex=False)])
    tokenizer.decoder = lib.decoders.ByteLevel()
    return _hf_functions(tokenizer) + (vocabulary,)


def _word_piece(folder: str, options: dict, class_name: str):
    """keras_hub's WordPieceTokenizer (its Python path), with `tokenizers`' WordPiece model:
    accents stripped (NFD, marks dropped), split on whitespace, punctuation and CJK, lowercased
    (NFKC then lower case; keras_hub case-folds, which differs for a few letters such as ß)."""
    lib = _library("tokenizers", f"The {class_name}")
    tokens = [line.rstrip() for line in _asset_text(folder, "vocabulary.txt").split("\n")]
    if tokens and tokens[-1] == "":
        tokens.pop()          # the file's last newline (keras_hub writes one per token)
    vocabulary = {token: i for i, token in enumerate(tokens)}   # a repeated token: its last id
    oov = options.get("oov_token", "[UNK]")
    if oov not in vocabulary:
        raise ModelFileError(f"{folder}: the {class_name} vocabulary has no {oov!r} token")
    if options.get("split") is False:
        raise UnsupportedLayerError(f"{folder}: a {class_name} with split=False (inputs split "
                                    "beforehand) is not supported.")
    prefix = options.get("suffix_indicator", "##")
    tokenizer = lib.Tokenizer(lib.models.WordPiece(
        vocab=vocabulary, unk_token=oov, max_input_chars_per_word=MAX_CHARS_PER_WORD,
        continuing_subword_prefix=prefix))
    steps = []
    if options.get("strip_accents"):
        steps += [lib.normalizers.NFD(), lib.normalizers.StripAccents()]
    if options.get("lowercase"):
        steps += [lib.normalizers.NFKC(), lib.normalizers.Lowercase()]
    if steps:
        tokenizer.normalizer = lib.normalizers.Sequence(steps)
    keep = WORDPIECE_PUNCTUATION + ("|" + WORDPIECE_CJK if options.get("split_on_cjk", True)
                                    else "")
    tokenizer.pre_tokenizer = lib.pre_tokenizers.Sequence([
        lib.pre_tokenizers.Split(lib.Regex(WORDPIECE_WHITESPACE), behavior="removed"),
        lib.pre_tokenizers.Split(lib.Regex(keep), behavior="isolated")])
    if options.get("special_tokens_in_strings"):
        # Never split nor lowercased, as keras_hub's special tokens in strings.
        specials = special_tokens(class_name) + list(options.get("special_tokens") or [])
        tokenizer.add_special_tokens(specials)
    # keras_hub joins the words with spaces, a suffix piece to the word before it.
    tokenizer.decoder = lib.decoders.WordPiece(prefix=prefix, cleanup=False)
    return _hf_functions(tokenizer) + (vocabulary,)


def _hf_functions(tokenizer):
    def encode(texts):
        return [encoding.ids for encoding in tokenizer.encode_batch(texts)]

    def decode(rows):
        return tokenizer.decode_batch(rows, skip_special_tokens=False)
    return encode, decode


def _sentence_piece(folder: str, options: dict, class_name: str):
    """keras_hub's SentencePieceTokenizer._set_proto_spm: the preset's model proto."""
    spm = _library("sentencepiece", f"The {class_name}")
    path = os.path.join(folder, ASSETS, "vocabulary.spm")
    add_bos, add_eos = bool(options.get("add_bos")), bool(options.get("add_eos"))
    try:
        processor = spm.SentencePieceProcessor(model_proto=_asset_bytes(path), out_type=int,
                                               add_bos=add_bos, add_eos=add_eos)
    except (RuntimeError, OSError) as exc:
        raise ModelFileError(f"{path}: not a SentencePiece model: {exc}") from exc
    vocabulary = {processor.id_to_piece(i): i
                  for i in reversed(range(processor.get_piece_size()))}

    def encode(texts):
        return [list(row) for row in processor.encode(texts, add_bos=add_bos, add_eos=add_eos)]

    def decode(rows):
        return list(processor.decode(rows))
    return encode, decode, vocabulary
