"""SentencePiece tokenizers, trained and loaded the way ALBERT uses them.

ALBERT tokenises with a SentencePiece unigram model (`spiece.model`) whose first
pieces are <pad>, <unk>, [CLS], [SEP], [MASK]. transformers 5 turns that file into a
fast tokenizer; note it must be loaded with `from_pretrained(folder)`: building
`AlbertTokenizer(vocab_file=...)` silently yields only the five special pieces.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from transformers import AlbertTokenizer, AutoTokenizer, PreTrainedTokenizerBase

from albert_lab.errors import CheckpointError, DataError

SPECIAL_PIECES = ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4
SPIECE = "spiece.model"


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


def load_tokenizer(folder: str | Path) -> PreTrainedTokenizerBase:
    """Load the tokenizer saved in a checkpoint folder and check it knows real words."""
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
