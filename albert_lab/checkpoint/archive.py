"""A release's .tar.gz or .zip, as downloaded, unpacked safely into the cache.

Only regular files and folders are unpacked, each inside the cache folder (no absolute
names, no '..', no links or devices), at most MAX_MEMBERS members and MAX_BYTES bytes in
all, each file copied with a bound on its size; anything else is one line naming the
member. The archive is unpacked once: its cache folder is keyed on its name, size and time.
Its release folder is named as in the archive, or after the archive when it unpacks flat; an
archive with more than one top-level entry is refused.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

from albert_lab.checkpoint.files import check_regular
from albert_lab.checkpoint.release import CONFIGS
from albert_lab.errors import CheckpointError
from albert_lab.paths import cache_dir

SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
MAX_MEMBERS = 1_000
MAX_BYTES = 16 << 30  # the largest release (ALBERT-xxlarge with its optimizer slots) is a few GB


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(SUFFIXES)


def _unpacked_folder(archive: Path) -> Path:
    """Where the archive's copy is unpacked in the cache: keyed on its path, size and time."""
    info = archive.stat()
    key = hashlib.sha256(f"{archive.resolve()}|{info.st_size}|{info.st_mtime_ns}".encode()).hexdigest()[:24]
    return cache_dir() / "releases" / "unpacked" / key


def is_unpacked(archive: Path) -> bool:
    """Whether the archive has been unpacked into the cache already (opening it again costs nothing)."""
    try:
        return archive.is_file() and _unpacked_folder(archive).is_dir()
    except OSError:
        return False


def unpacked_release(archive: Path) -> Path:
    """The release folder inside the archive's unpacked copy in the cache (unpacked now, once)."""
    check_regular(archive)
    out = _unpacked_folder(archive)
    if not out.is_dir():
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            with _members(archive) as members:
                total = 0
                for count, (name, kind, size, read) in enumerate(members, 1):
                    if count > MAX_MEMBERS:
                        raise CheckpointError(f"{archive} holds more than {MAX_MEMBERS:,} members; not a release archive")
                    total += size
                    if total > MAX_BYTES:
                        raise CheckpointError(f"{archive} unpacks to more than {MAX_BYTES / 2**30:,.0f} GiB; not a release archive")
                    _unpack_member(archive, tmp, name, kind, size, read)
            _name_flat(tmp, archive)
            os.replace(tmp, out)
        except CheckpointError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        except OSError as err:
            shutil.rmtree(tmp, ignore_errors=True)
            if not out.is_dir():
                raise CheckpointError(f"{archive} cannot be unpacked into {out.parent} ({err.strerror or err})") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    found = sorted({p.parent for name in CONFIGS.values() for p in out.rglob(name)})
    if not found:
        raise CheckpointError(f"{archive} holds no albert_config.json or bert_config.json: not one of Google's original "
                              "releases; unpack it and give the folder that holds config.json")
    tops = sorted(p.name for p in out.iterdir() if p.name != "__MACOSX")  # macOS's zip adds that folder
    if len(found) > 1 or len(tops) > 1:
        shown = ", ".join(str(p.relative_to(out)) for p in found[:3]) if len(found) > 1 else ", ".join(tops[:3])
        raise CheckpointError(f"{archive} holds {'several releases' if len(found) > 1 else f'{len(tops)} top-level entries'} "
                              f"({shown}{', ...' if max(len(found), len(tops)) > 3 else ''}); a release's archive holds one "
                              "folder: unpack it and give the release's folder")
    return found[0]


def _name_flat(root: Path, archive: Path) -> None:
    """An archive that unpacks flat (its files at the top, as the smaller BERTs' zips do) is put in a
    folder named after the archive: the release's name says what it is (cased_L-12_... is cased)."""
    entries = list(root.iterdir())
    if entries and all(p.is_file() for p in entries):
        stem = archive.name[:-len(next(s for s in SUFFIXES if archive.name.lower().endswith(s)))]
        inner = root / (stem or "release")
        inner.mkdir()
        for entry in entries:
            entry.rename(inner / entry.name)


Member = tuple[str, str, int, "IO[bytes] | None"]  # name, 'file' or 'dir', size, an open reader of a file


@contextmanager
def _members(archive: Path) -> Iterator[Iterator[Member]]:
    if archive.name.lower().endswith(".zip"):
        try:
            with zipfile.ZipFile(archive) as handle:
                yield _zip_members(archive, handle)
        except CheckpointError:
            raise
        except (zipfile.BadZipFile, EOFError, ValueError) as err:
            raise CheckpointError(f"{archive} is not a readable zip archive ({str(err)[:80]}); download it again") from None
    else:
        try:
            with tarfile.open(archive, "r:*") as handle:
                yield _tar_members(archive, handle)
        except CheckpointError:
            raise
        except (tarfile.TarError, EOFError, ValueError) as err:
            raise CheckpointError(f"{archive} is not a readable tar archive ({str(err)[:80]}); download it again") from None


def _tar_members(archive: Path, handle: tarfile.TarFile) -> Iterator[Member]:
    for member in handle:
        if member.isdir():
            yield member.name, "dir", 0, None
        elif member.isfile():
            yield member.name, "file", member.size, handle.extractfile(member)
        else:
            kind = "a link" if member.issym() or member.islnk() else "a device or FIFO"
            raise CheckpointError(f"{archive}: member {member.name[:120]!r} is {kind}; a release holds only files: "
                                  "download it again from its source")


def _zip_members(archive: Path, handle: zipfile.ZipFile) -> Iterator[Member]:
    import stat

    for info in handle.infolist():
        mode = info.external_attr >> 16
        if mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise CheckpointError(f"{archive}: member {info.filename[:120]!r} is a link or special file; a release holds "
                                  "only files: download it again from its source")
        if info.is_dir():
            yield info.filename, "dir", 0, None
        else:
            yield info.filename, "file", info.file_size, handle.open(info)


def _unpack_member(archive: Path, root: Path, name: str, kind: str, size: int, read: IO[bytes] | None) -> None:
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if not parts or name.startswith(("/", "\\")) or ".." in parts or any(":" in p for p in parts[:1]):
        raise CheckpointError(f"{archive}: member {name[:120]!r} would land outside the folder it is unpacked into; "
                              "a release never holds such names: download it again from its source")
    target = root.joinpath(*[p for p in parts if p != "."])
    if kind == "dir":
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    assert read is not None
    written = 0
    with read, open(target, "xb") as out:
        while chunk := read.read(1 << 20):
            written += len(chunk)
            if written > size:
                raise CheckpointError(f"{archive}: member {name[:120]!r} holds more bytes than its header says; download it again")
            out.write(chunk)
