"""CLI command for the training corpora: corpora (registered on import by albert_lab/cli/__init__.py)."""

from __future__ import annotations

import argparse
import sys

from albert_lab.cli.common import command, emit, table
from albert_lab.errors import AlbertLabError


def _corpora_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--install", nargs="*", metavar="NAME", default=None,
                   help="download (pinned, checked) and extract missing sources: those of long-mix and the out-of-domain "
                        "test set, or the sources (or named mixes, e.g. long-mix-plus) given")
    p.add_argument("--force", action="store_true", help="with --install: re-extract installed sources too")
    p.add_argument("--json", action="store_true")


@command("corpora", "the training corpora: each source's size, documents, sentences per document, licence")(_corpora_arguments)
def cmd_corpora(args: argparse.Namespace) -> int:
    from albert_lab.data.corpora import DEFAULT, NAMED, PLUS, describe_corpora
    from albert_lab.data.sources import SOURCES, install

    if args.force and args.install is None:
        raise AlbertLabError("--force goes with --install")
    if args.install is not None:
        names = []
        for name in args.install:
            if name not in SOURCES and name not in NAMED:
                raise AlbertLabError(f"--install: unknown source or mix {name!r}; allowed: {', '.join([*NAMED, *SOURCES])}")
            names += [part for part in NAMED.get(name, (name,)) if part in SOURCES and part not in names]
        install(names or None, log=lambda line: print(line, file=sys.stderr), force=args.force)
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
