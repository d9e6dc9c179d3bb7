"""Everything a run needs before its first step, checked up front: the corpus, the
tokenizer (trained once per corpus and vocab size, then cached), the tokenised
documents, the held-out pairs. Errors here reach the user before any process or
run folder exists. A run prepares once: the foreground hands this preparation to the
trainer; a background worker prepares again from the caches the check filled (the
tokenizer and the tokenised corpus), skipping the checks (`checked`) its run passed. The
config comes validated (jobs.create_run)."""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from albert_lab.data.corpora import evaluation_documents, load_corpus
from albert_lab.data.corpus import Corpus, Document
from albert_lab.data.heldout import build_eval_pairs
from albert_lab.data.pairs import check_pairable, create_instances
from albert_lab.data.tokenized import TokenizedDocs, tokenize_documents
from albert_lab.distil import check_teacher
from albert_lab.errors import AlbertLabError, DataError, RunError
from albert_lab.fields import ascii_int
from albert_lab.paths import cache_dir
from albert_lab.spec import ModelSpec
from albert_lab.tokenizer import load_tokenizer, train_tokenizer
from albert_lab.training.config import TrainConfig
from albert_lab.training.options import KEPT_BY_UPTRAINING


@dataclass
class Prepared:
    config: TrainConfig
    spec: ModelSpec  # vocab_size set from the tokenizer
    corpus: Corpus
    tokenizer: object
    tokenizer_dir: Path
    train_docs: TokenizedDocs
    eval_pairs: pd.DataFrame
    eval_documents: int = 0  # how many documents eval_pairs come from


def prepare(config: TrainConfig, checked: bool = False, cache_quota: int | None = None) -> Prepared:
    """What a run of `config` trains and is scored on. `checked`: the config passed this
    check before its run folder was made, so what only refuses (a corpus that makes no
    pairs or too few for a batch, a teacher that cannot teach) is not done again.
    `cache_quota`: the bytes cached tokenizers and tokenized corpora may hold before a
    new tokenizer is refused (the app's visitors; None: no limit). `config` passed validate."""
    corpus = load_corpus(config.corpus)
    if not checked:
        check_pairable([len(d.segments) for d in corpus.train], config.objective, corpus.name)
    heldout = eval_documents(config, corpus)
    if config.init_from:
        return _prepared(config, corpus, heldout, *init_source(config, checked), checked=checked)
    tokenizer_dir = Path(config.tokenizer) if config.tokenizer else cached_tokenizer_dir(corpus, config)
    if config.tokenizer:
        if not tokenizer_dir.is_dir():
            raise RunError(f"tokenizer: {tokenizer_dir} is not a folder")
        tokenizer = load_tokenizer(tokenizer_dir)
    elif (tokenizer_dir / "tokenizer_config.json").is_file():
        tokenizer = load_tokenizer(tokenizer_dir)
    else:
        if cache_quota is not None:
            check_cache_room(corpus, config, cache_quota)
        texts = [s for d in corpus.train for s in d.segments]
        tmp = tokenizer_dir.with_name(f"{tokenizer_dir.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            train_tokenizer(texts, tmp, vocab_size=config.vocab_size, lowercase=config.lowercase, seed=config.seed)
            try:
                tmp.rename(tokenizer_dir)
            except OSError:  # another launch finished the same tokenizer first: use theirs
                if not (tokenizer_dir / "tokenizer_config.json").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        tokenizer = load_tokenizer(tokenizer_dir)
    return _prepared(config, corpus, heldout, config.model_spec().replace(vocab_size=len(tokenizer)), tokenizer, tokenizer_dir,
                     checked=checked)


def _prepared(config: TrainConfig, corpus: Corpus, heldout: tuple[Document, ...], spec: ModelSpec, tokenizer,
              tokenizer_dir: Path, checked: bool) -> Prepared:
    if config.distil_from and not checked:  # the trainer's load_teacher refuses as this does
        check_teacher(config.distil_from, spec, tokenizer, pair=config.distil_pair, seq_len=config.max_seq_len)
    docs = tokenize_documents(corpus.train, tokenizer, cache_key=f"{corpus.fingerprint}-train")
    if not checked:
        _check_one_batch(config, corpus, docs)
    return Prepared(config=config, spec=spec, corpus=corpus, tokenizer=tokenizer, tokenizer_dir=tokenizer_dir,
                    train_docs=docs, eval_pairs=build_eval_pairs(heldout), eval_documents=len(heldout))


def _check_one_batch(config: TrainConfig, corpus: Corpus, docs: TokenizedDocs) -> None:
    pairs = len(create_instances(docs, config.objective, config.max_seq_len, np.random.default_rng([config.seed, 0]),
                                 config.short_seq_prob))
    if pairs < config.batch_size:
        raise DataError(f"{corpus.name}: yields {pairs} training pairs, fewer than one batch of {config.batch_size}; "
                        "use a bigger corpus or a smaller batch size")


def eval_documents(config: TrainConfig, corpus: Corpus) -> tuple[Document, ...]:
    """The documents a run is scored on: its corpus's held-out ones, or those `albert-lab
    evaluate` scores of `eval_corpus` (its held-out documents; all of an out-of-domain
    source's), none of which may be one the run trains on."""
    if not config.eval_corpus or config.eval_corpus in (config.corpus, corpus.name):
        return corpus.heldout
    try:
        heldout = evaluation_documents(load_corpus(config.eval_corpus))
    except AlbertLabError as err:
        raise DataError(f"eval_corpus: {err}") from None
    if not heldout:
        raise DataError(f"eval_corpus: {config.eval_corpus} has no held-out documents to score on (a corpus of one "
                        "document holds none out)")
    trained = {d.segments for d in corpus.train}
    seen = sum(d.segments in trained for d in heldout)
    if seen:
        raise DataError(f"eval_corpus: {seen:,} of the {len(heldout):,} held-out documents of {config.eval_corpus} are training "
                        f"documents of {corpus.name}; a score on them would measure memory")
    return heldout


def init_source(config: TrainConfig, checked: bool = False) -> tuple[ModelSpec, object, Path]:
    """The spec, tokenizer and folder of the checkpoint a run starts from. The run's spec
    must be the checkpoint's architecture (objective and dropout may differ). Unless `checked`,
    loaded as the run will load it: NaN weights or outputs are refused before the run's folder exists."""
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.training.init import uptrain_spec

    try:
        folder, spec = uptrain_spec(Path(str(config.init_from)))
        tokenizer = load_tokenizer(folder) if checked else load_checkpoint(folder, device="cpu").tokenizer
    except AlbertLabError as err:
        raise RunError(f"init_from: {err}") from None
    wanted = config.model_spec()
    differ = [f"{name} {getattr(wanted, name)!r} (checkpoint: {getattr(spec, name)!r})" for name in KEPT_BY_UPTRAINING
              if getattr(wanted, name) != getattr(spec, name)]
    if differ:
        raise RunError(f"init_from: the run's spec differs from the checkpoint's in {', '.join(differ)}; "
                       "a run that starts from a checkpoint keeps its architecture")
    if config.tokenizer and Path(config.tokenizer).resolve() != folder.resolve():
        raise RunError("tokenizer: a run that starts from a checkpoint uses the checkpoint's tokenizer; leave tokenizer unset")
    return wanted, tokenizer, folder


CACHED = ("tokenizers", "tokenized")  # what launches add to the cache: a tokenizer and its tokenized corpus


def check_cache_room(corpus: Corpus, config: TrainConfig, quota: int) -> None:
    """RunError where the cached tokenizers and tokenized corpora already hold `quota` bytes,
    so a new tokenizer (another corpus or vocabulary size) would pass it; it names the
    vocabulary sizes cached for this corpus, whose runs need nothing new."""
    from albert_lab.limits import folder_bytes

    used = sum(folder_bytes(cache_dir() / name) for name in CACHED)
    if used < quota:
        return
    prefix = f"{corpus.fingerprint}-"
    sizes = sorted({size for p in (cache_dir() / "tokenizers").glob(f"{prefix}*-*")
                    if (size := ascii_int(p.name.split("-")[1])) is not None and (p / "tokenizer_config.json").is_file()})
    name = config.corpus or corpus.name
    known = (f"; vocabulary sizes already made for {name}: {', '.join(map(str, sizes))}" if sizes
             else f"; no tokenizer of {name} is cached yet")
    raise RunError(f"disk quota: the cached tokenizers and tokenized corpora hold {used / 2**30:.2f} GiB of the "
                   f"{quota / 2**30:.2f} GiB that runs started here may fill, and a vocabulary of {config.vocab_size:,} "
                   f"on {name} needs a new tokenizer{known}")


def cached_tokenizer_dir(corpus: Corpus, config: TrainConfig) -> Path:
    case = "lower" if config.lowercase else "cased"
    return cache_dir() / "tokenizers" / f"{corpus.fingerprint}-{config.vocab_size}-{case}"
