"""SentencePiece tokenizers, trained and loaded the way ALBERT uses them; and the
tokenizers of Google's original releases, as their own code tokenises.

ALBERT tokenises with a SentencePiece unigram model (`spiece.model`) whose first
pieces are <pad>, <unk>, [CLS], [SEP], [MASK]. transformers 5 turns that file into a
fast tokenizer; note it must be loaded with `from_pretrained(folder)`: building
`AlbertTokenizer(vocab_file=...)` silently yields only the five special pieces.

A release's tokenizer is not that fast one: it differs from the release's own code on
ordinary text (transformers 5 keeps '3,' whole in "$3,500", decomposes Hangul into jamo
it has no piece for). `ReleaseAlbertTokenizer` is ALBERT's `tokenization.py` (SentencePiece
with the release's model after its preprocessing: spaces collapsed, `` and '' to ",
NFKD with combining marks dropped, lower case; a piece ending in a comma after a digit
split again), and BERT's is its `BasicTokenizer` + WordPiece (transformers' slow
`BertTokenizerLegacy`, the same code), with the release's casing. Both run in Python
beside transformers' machinery for pairs, padding and tensors; their `ids_of` gives many
texts' ids at once, the same ids from whole-string steps (release_fast.py). A converted
release's tokenizer_config.json says which (`RELEASE_KEY`), and `load_tokenizer` builds it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from transformers import AlbertTokenizer, AutoTokenizer, PreTrainedTokenizer, PreTrainedTokenizerBase
from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy
from transformers.tokenization_utils_base import AddedToken

from albert_lab.errors import CheckpointError, DataError
from albert_lab.release_fast import albert_ids, bert_ids

SPECIAL_PIECES = ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4
SPIECE = "spiece.model"
VOCAB = "vocab.txt"
RELEASE_KEY = "albert_lab_release_tokenizer"  # in tokenizer_config.json: {"family": "albert" | "bert", "lowercase": bool}
UNDERLINE = "\u2581"  # SentencePiece's word-start mark


def train_tokenizer(texts: Iterable[str], out_dir: str | Path, vocab_size: int = 8000,
                    lowercase: bool = True, seed: int = 0) -> PreTrainedTokenizerBase:
    """Train a unigram SentencePiece model on `texts` and save it, with the
    transformers tokenizer files, into `out_dir`."""
    import sentencepiece as spm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    texts = [t.lower() if lowercase else t for t in texts if t.strip()]
    if not texts:
        raise DataError("cannot train a tokenizer on an empty corpus")
    with tempfile.TemporaryDirectory() as tmp:
        prefix = str(Path(tmp) / "spiece")
        spm.set_random_generator_seed(seed)
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(texts), model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
                pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>", unk_piece="<unk>",
                control_symbols=list(SPECIAL_PIECES[2:]), character_coverage=0.9995, input_sentence_size=0,
                shuffle_input_sentence=False, num_threads=2, minloglevel=2,
                max_sentence_length=1 << 16,
            )
        except RuntimeError as err:
            raise DataError(_explain_spm_error(str(err), vocab_size)) from None
        shutil.copy(prefix + ".model", out / SPIECE)
    tokenizer = AlbertTokenizer.from_pretrained(str(out), do_lower_case=lowercase, keep_accents=False)
    tokenizer.save_pretrained(str(out))
    check_tokenizer(tokenizer, str(out))
    return tokenizer


def _explain_spm_error(message: str, vocab_size: int) -> str:
    needed = re.search(r"smaller than required_chars\D*\d+ vs (\d+)", message)
    if needed:  # e.g. a CJK corpus: every distinct character needs a piece of its own
        return (f"vocab size {vocab_size} is smaller than the {needed[1]} distinct characters this corpus needs; "
                f"choose a vocab size of at least {int(needed[1]) + 100}, or a corpus with fewer distinct characters")
    if "Vocabulary size is too high" in message or "vocab_size" in message:
        limit = message.rsplit("<=", 1)[-1].strip(" .") if "<=" in message else "smaller"
        return (f"vocab size {vocab_size} is larger than this corpus supports (at most {limit}); "
                "choose a smaller vocab size or a bigger corpus")
    return f"SentencePiece could not train on this corpus: {message.strip()}"


def load_tokenizer(folder: str | Path, lowercase: bool | None = None) -> PreTrainedTokenizerBase:
    """Load the tokenizer saved in a checkpoint folder and check it knows real words. A converted
    release's is its own code's (`release_tokenizer`), lower-casing as its folder says unless
    `lowercase` says otherwise."""
    release = release_tokenization(Path(folder))
    if release is not None:
        family, own = release
        return release_tokenizer(Path(folder) / (SPIECE if family == "albert" else VOCAB), family,
                                 own if lowercase is None else lowercase)
    if lowercase is not None:
        raise CheckpointError(f"{folder}: --cased/--uncased apply to Google's original releases; this checkpoint's "
                              "tokenizer carries its own casing (tokenizer_config.json)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    except Exception as err:  # broken tokenizer files fail in many types (DecodeError, RuntimeError, TypeError, ...)
        first = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise CheckpointError(f"{folder}: no usable tokenizer ({first}); a checkpoint needs spiece.model "
                              "or tokenizer.json beside config.json") from None
    try:
        check_tokenizer(tokenizer, str(folder))
    except CheckpointError:
        raise
    except Exception as err:  # edited special tokens fail inside transformers (TypeError, RecursionError for unk_token '')
        raise CheckpointError(f"{folder}: the tokenizer fails on a test sentence ({type(err).__name__}: {str(err)[:120]}); "
                              "restore tokenizer_config.json and special_tokens_map.json") from None
    return tokenizer


def check_tokenizer(tokenizer: PreTrainedTokenizerBase, where: str) -> None:
    """Refuse a tokenizer that only knows its special pieces (every word -> <unk>), or that
    lacks a special token a pair input needs ([CLS], [SEP], padding, unknown)."""
    absent = [name for name in ("pad_token", "cls_token", "sep_token", "unk_token") if getattr(tokenizer, name, None) is None]
    if absent:
        raise CheckpointError(f"{where}: the tokenizer has no {', '.join(absent)} (tokenizer_config.json names "
                              f"{type(tokenizer).__name__}); restore tokenizer_config.json and special_tokens_map.json")
    ids = tokenizer("the city of paris is the capital of france", add_special_tokens=False)["input_ids"]
    tokenizer("a", "b", padding="max_length", max_length=8, truncation=True)  # the pair input every analysis builds
    if len(tokenizer) <= len(SPECIAL_PIECES) + 1 or all(i == tokenizer.unk_token_id for i in ids):
        raise CheckpointError(f"{where}: the tokenizer maps every word to <unk> (vocabulary of {len(tokenizer)}); "
                              "load it with from_pretrained on the folder that holds spiece.model")


def fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
    """A short hash of the vocabulary, used as part of cache keys."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    digest = hashlib.sha256(repr((vocab, getattr(tokenizer, "do_lower_case", None))).encode())
    return digest.hexdigest()[:16]


def save_tokenizer(tokenizer: PreTrainedTokenizerBase, out_dir: str | Path, source: str | Path | None = None) -> None:
    """Save tokenizer files and, when known, the original spiece.model beside them."""
    tokenizer.save_pretrained(str(out_dir))
    for candidate in (Path(source) / SPIECE if source else None, getattr(tokenizer, "vocab_file", None)):
        if candidate and Path(candidate).is_file() and Path(candidate).name == SPIECE:
            if Path(candidate).resolve() != (Path(out_dir) / SPIECE).resolve():
                shutil.copy(candidate, Path(out_dir) / SPIECE)
            break


# ---- Google's original releases -----------------------------------------------------------------
class LowerFirst:
    """transformers 4.46's slow tokenizers lower-case the text outside special tokens first, one
    character at a time ('<UNK>' becomes the unknown token; a final 'Σ' becomes 'σ', not 'ς')."""

    do_lower_case: bool
    all_special_tokens: list[str]

    def tokenize(self, text: str, **kwargs: Any) -> list[str]:
        if self.do_lower_case:
            pattern = "(" + "|".join(re.escape(t) for t in self.all_special_tokens) + ")|(.+?)"
            text = re.sub(pattern, lambda m: m.group(1) or m.group(2).lower(), text)
        return super().tokenize(text, **kwargs)  # type: ignore[misc]


class ReleaseAlbertTokenizer(LowerFirst, PreTrainedTokenizer):
    """ALBERT's `tokenization.py` (`FullTokenizer` with a SentencePiece model), as transformers 4.46's
    slow `AlbertTokenizer` ports it: [MASK] typed in the text is the mask token."""

    vocab_files_names = {"vocab_file": SPIECE}
    model_input_names = ["input_ids", "token_type_ids", "attention_mask"]

    def __init__(self, vocab_file: str, do_lower_case: bool = True, keep_accents: bool = False, **kwargs: Any) -> None:
        import sentencepiece as spm

        self.vocab_file, self.do_lower_case, self.keep_accents = str(vocab_file), do_lower_case, keep_accents
        self.sp_model = spm.SentencePieceProcessor()
        self.sp_model.Load(self.vocab_file)
        kwargs = {"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "<unk>", "sep_token": "[SEP]",
                  "pad_token": "<pad>", "cls_token": "[CLS]", **kwargs,
                  "mask_token": AddedToken("[MASK]", lstrip=True, rstrip=False, normalized=False)}
        super().__init__(do_lower_case=do_lower_case, keep_accents=keep_accents, **kwargs)

    @property
    def vocab_size(self) -> int:
        return self.sp_model.get_piece_size()

    def get_vocab(self) -> dict[str, int]:
        return {self.sp_model.IdToPiece(i): i for i in range(self.vocab_size)} | self.added_tokens_encoder

    def preprocess_text(self, text: str) -> str:
        text = " ".join(text.strip().split()).replace("``", '"').replace("''", '"')
        if not self.keep_accents:
            text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
        return text.lower() if self.do_lower_case else text

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        pieces = []
        for piece in self.sp_model.encode(self.preprocess_text(text), out_type=str):
            pieces += self.split_comma(piece) if self.comma_piece(piece) else [piece]
        return pieces

    @staticmethod
    def comma_piece(piece: str) -> bool:
        """Whether ALBERT's tokenization.py splits a piece again: one that ends in a comma after a digit."""
        return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()

    def split_comma(self, piece: str) -> list[str]:
        """A piece that ends in a comma after a digit, encoded again without the comma, then the comma:
        '9,9' -> '9' ',' '9', not '9,' '9'."""
        again = self.sp_model.EncodeAsPieces(piece[:-1].replace(UNDERLINE, ""))
        if piece[0] != UNDERLINE and again[0][0] == UNDERLINE:
            again = again[1:] if len(again[0]) == 1 else [again[0][1:], *again[1:]]
        return [*again, piece[-1]]

    def ids_of(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's ids without special tokens, as `self(texts, add_special_tokens=False)` gives them, fast."""
        return albert_ids(self, texts)

    def _convert_token_to_id(self, token: str) -> int:
        return self.sp_model.PieceToId(token)

    def _convert_id_to_token(self, index: int) -> str:
        return self.sp_model.IdToPiece(index)

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        text, pieces, special = "", [], set(self.all_special_tokens)
        for token in tokens:  # special tokens are not SentencePiece's to decode
            if token in special:
                text += " " * bool(text or pieces) + self.sp_model.decode(pieces) + token
                pieces = []
            else:
                pieces.append(token)
        return (text + self.sp_model.decode(pieces)).strip()

    def build_inputs_with_special_tokens(self, ids: list[int], pair: list[int] | None = None) -> list[int]:
        return [self.cls_token_id, *ids, self.sep_token_id] + ([*pair, self.sep_token_id] if pair is not None else [])

    def create_token_type_ids_from_sequences(self, ids: list[int], pair: list[int] | None = None) -> list[int]:
        return [0] * (len(ids) + 2) + ([1] * (len(pair) + 1) if pair is not None else [])

    def get_special_tokens_mask(self, ids: list[int], pair: list[int] | None = None,
                                already_has_special_tokens: bool = False) -> list[int]:
        if already_has_special_tokens:
            return super().get_special_tokens_mask(ids, pair, already_has_special_tokens=True)
        return [1, *[0] * len(ids), 1] + ([*[0] * len(pair), 1] if pair is not None else [])

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str]:
        out = Path(save_directory) / f"{filename_prefix + '-' if filename_prefix else ''}{SPIECE}"
        if Path(self.vocab_file).resolve() != out.resolve():
            out.write_bytes(self.sp_model.serialized_model_proto())
        return (str(out),)


class ReleaseBertTokenizer(LowerFirst, BertTokenizerLegacy):
    """BERT's `tokenization.py` (BasicTokenizer + WordPiece), as transformers 4.46's slow
    `BertTokenizer` ports it (transformers 5 keeps that code as `BertTokenizerLegacy`)."""

    def ids_of(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's ids without special tokens, as `self(texts, add_special_tokens=False)` gives them, fast."""
        return bert_ids(self, texts)


def release_tokenizer(file: Path, family: str, lowercase: bool) -> PreTrainedTokenizerBase:
    """The tokenizer of a release's `spiece.model` (ALBERT) or `vocab.txt` (BERT), as its own code
    tokenises (checkpoint.release checked the file when the release was converted; one edited since
    is refused in one line here)."""
    try:
        cls = ReleaseAlbertTokenizer if family == "albert" else ReleaseBertTokenizer
        tokenizer = cls(str(file), do_lower_case=lowercase)
    except Exception as err:  # a damaged model fails in many types (RuntimeError, OSError, UnicodeDecodeError, ...)
        raise CheckpointError(f"{file}: not a {'SentencePiece model' if family == 'albert' else 'WordPiece vocabulary'} "
                              f"({type(err).__name__}); re-copy the release, or convert it again") from None
    check_tokenizer(tokenizer, str(file))
    return tokenizer


def save_release_tokenizer(folder: Path, family: str, lowercase: bool) -> None:
    """Mark a converted release's tokenizer files as its own code's (read by `load_tokenizer`)."""
    config_file = folder / "tokenizer_config.json"
    config = json.loads(config_file.read_text()) if config_file.is_file() else {}
    config[RELEASE_KEY] = {"family": family, "lowercase": lowercase}
    config_file.write_text(json.dumps(config, indent=2))


def release_tokenization(folder: Path) -> tuple[str, bool] | None:
    """(family, lower-cases) of a converted release's tokenizer; None for any other checkpoint."""
    try:
        config = json.loads((folder / "tokenizer_config.json").read_bytes()[:1 << 20])
    except (OSError, ValueError):
        return None
    mark = config.get(RELEASE_KEY) if isinstance(config, dict) else None
    if not isinstance(mark, dict) or mark.get("family") not in ("albert", "bert") or not isinstance(mark.get("lowercase"), bool):
        return None
    return mark["family"], mark["lowercase"]
