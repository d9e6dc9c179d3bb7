"""Everything a run needs before its first step, checked up front: the corpus, the
tokenizer (trained once per corpus and vocab size, then cached), the tokenised
documents, the held-out pairs. Errors here reach the user before any process or
run folder exists."""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from albert_lab.data.corpora import load_corpus
from albert_lab.data.corpus import Corpus
from albert_lab.data.heldout import build_eval_pairs
from albert_lab.data.pairs import check_pairable, create_instances
from albert_lab.data.tokenized import TokenizedDocs, tokenize_documents
from albert_lab.errors import DataError, RunError
from albert_lab.paths import cache_dir
from albert_lab.spec import ModelSpec
from albert_lab.tokenizer import load_tokenizer, train_tokenizer
from albert_lab.training.config import TrainConfig


@dataclass
class Prepared:
    config: TrainConfig
    spec: ModelSpec  # vocab_size set from the tokenizer
    corpus: Corpus
    tokenizer: object
    tokenizer_dir: Path
    train_docs: TokenizedDocs
    eval_pairs: pd.DataFrame


def prepare(config: TrainConfig) -> Prepared:
    config.validate()
    corpus = load_corpus(config.corpus)
    check_pairable([len(d.segments) for d in corpus.train], config.objective, corpus.name)
    tokenizer_dir = Path(config.tokenizer) if config.tokenizer else cached_tokenizer_dir(corpus, config)
    if config.tokenizer:
        if not tokenizer_dir.is_dir():
            raise RunError(f"tokenizer: {tokenizer_dir} is not a folder")
        tokenizer = load_tokenizer(tokenizer_dir)
    elif (tokenizer_dir / "tokenizer_config.json").is_file():
        tokenizer = load_tokenizer(tokenizer_dir)
    else:
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
    spec = config.model_spec().replace(vocab_size=len(tokenizer))
    docs = tokenize_documents(corpus.train, tokenizer, cache_key=f"{corpus.fingerprint}-train")
    pairs = len(create_instances(docs, config.objective, config.max_seq_len, np.random.default_rng([config.seed, 0]),
                                 config.short_seq_prob))
    if pairs < config.batch_size:
        raise DataError(f"{corpus.name}: yields {pairs} training pairs, fewer than one batch of {config.batch_size}; "
                        "use a bigger corpus or a smaller batch size")
    return Prepared(config=config, spec=spec, corpus=corpus, tokenizer=tokenizer, tokenizer_dir=tokenizer_dir,
                    train_docs=docs, eval_pairs=build_eval_pairs(corpus.heldout))


def cached_tokenizer_dir(corpus: Corpus, config: TrainConfig) -> Path:
    case = "lower" if config.lowercase else "cased"
    return cache_dir() / "tokenizers" / f"{corpus.fingerprint}-{config.vocab_size}-{case}"
