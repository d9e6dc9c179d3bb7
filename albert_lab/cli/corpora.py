"""CLI command for the training corpora: corpora (registered on import by albert_lab/cli/__init__.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from albert_lab.cli.common import command, emit, table
from albert_lab.errors import AlbertLabError
from albert_lab.paths import cache_dir
from albert_lab.runfolder import write_json_atomic
from albert_lab.training.config import TrainConfig

MADE = "made-at-install.json"  # in the tokenizer cache: which corpus, vocabulary and case each tokenizer made here is for


def _corpora_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--install", nargs="*", metavar="NAME", default=None,
                   help="download (pinned, checked) and extract missing sources: those of long-mix and the out-of-domain "
                        "test set, or the sources (or named mixes, e.g. long-mix-plus) given")
    p.add_argument("--force", action="store_true", help="with --install: re-extract installed sources too")
    p.add_argument("--quiet", action="store_true", help="with --install: no table after it (what scripts/app.sh runs: "
                                                        "describing the corpora reads them, 0.4 s)")
    p.add_argument("--no-tokenizers", dest="tokenizers", action="store_false",
                   help="with --install: the sources only, not the tokenizer a run trains with by default (what "
                        "scripts/test.sh runs: the tests make their own; a minute saved; the first Start makes it)")
    p.add_argument("--json", action="store_true")


@command("corpora", "the training corpora: each source's size, documents, sentences per document, licence")(_corpora_arguments)
def cmd_corpora(args: argparse.Namespace) -> int:
    from albert_lab.data.corpora import DEFAULT, NAMED, PLUS, describe_corpora, mix_installed
    from albert_lab.data.sources import SOURCES, install

    if args.install is None and (given := [flag for flag, on in (("--force", args.force), ("--quiet", args.quiet),
                                                                  ("--no-tokenizers", not args.tokenizers)) if on]):
        raise AlbertLabError(f"{given[0]} goes with --install")
    if args.install is not None:
        names = []
        for name in args.install:
            if name not in SOURCES and name not in NAMED:
                raise AlbertLabError(f"--install: unknown source or mix {name!r}; allowed: {', '.join([*NAMED, *SOURCES])}")
            names += [part for part in NAMED.get(name, (name,)) if part in SOURCES and part not in names]
        install(names or None, log=lambda line: print(line, file=sys.stderr), force=args.force)
        if args.tokenizers:
            prepare_tokenizers([mix for mix in NAMED if mix_installed(mix)], log=lambda line: print(line, file=sys.stderr))
        if args.quiet:
            return 0
    rows = describe_corpora()

    def cell(value, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    mixes = lambda r: ", default mix" if r["in_default_mix"] else f", {PLUS}" if r["in_plus"] else ""
    table_rows = [(r["name"], r["role"] + mixes(r), cell(r["megabytes"], ".1f"),
                   cell(r["documents"], ","), cell(r["sentences_per_doc"], ".0f"), cell(r["median_sentences"], ","),
                   cell(r["interior_pairs"], ","), r["licence"] if r["installed"] else f"not installed: {r['install']}")
                  for r in rows]
    text = table(table_rows, ["source", "role", "MB", "documents", "sentences/doc", "median", "interior pairs", "licence"])
    emit(args, rows, f"{text}\n\nThe default corpus, {DEFAULT}, mixes the sources marked 'default mix'; {PLUS} adds "
                     f"those marked so (about twice the training text; `albert-lab corpora --install {PLUS}`). 5% of each "
                     "source's documents are held out for evaluation.")
    return 0


def prepare_tokenizers(corpora: Sequence[str], log: Callable[[str], None], config: TrainConfig | None = None) -> list[Path]:
    """The tokenizer, and the tokenized training text, that a run of `config` (default: TrainConfig's,
    the Training page's and `train`'s vocabulary and case) needs on each of `corpora`, made now,
    as a Start makes them (training.prepare), so that a first Start finds them cached: training
    the tokenizer of long-mix took 45 s on two idle AMD Zen 4 cores, 72 s on two idle Intel Xeon
    (Skylake) ones and 185 s on a busy machine, inside the first Start. Where they are made
    already, only the corpus is read (0.4 s for long-mix) and neither torch nor transformers is
    imported. Returns the tokenizer folders."""
    import dataclasses

    from albert_lab.data.corpora import load_corpus

    config = config or TrainConfig()
    made_file = cache_dir() / "tokenizers" / MADE
    made = _read_made(made_file)
    folders = []
    for name in corpora:
        corpus = load_corpus(name)
        key = f"{corpus.fingerprint}-{config.vocab_size}-{'lower' if config.lowercase else 'cased'}"
        folder = made.get(key)
        if folder is None or not (Path(folder) / "tokenizer_config.json").is_file():
            load, cores = os.getloadavg()[0], os.cpu_count() or 1
            busy = f"; longer now, the machine is busy (load {load:.0f} on {cores} cores)" if load > cores else ""
            log(f"making the tokenizer runs on {name} start with ({config.vocab_size:,} pieces), once: 40-80 s on two "
                f"quiet cores, by their kind{busy}, so that the first Start does not wait for it ...")
            from albert_lab.training.prepare import prepare  # torch and transformers: only when there is work

            started = time.monotonic()
            folder = str(prepare(dataclasses.replace(config, corpus=name)).tokenizer_dir)
            log(f"made in {time.monotonic() - started:.0f} s")
            made = {**_read_made(made_file), key: folder}  # another install may have added one meanwhile
            write_json_atomic(made_file, made)
        folders.append(Path(folder))
    return folders


def _read_made(path: Path) -> dict[str, str]:
    """The record of tokenizers made at install; a damaged or missing one is empty (they are made again)."""
    try:
        made = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in made.items() if isinstance(v, str)} if isinstance(made, dict) else {}
