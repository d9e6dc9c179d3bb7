"""A release's .tar.gz or .zip, as downloaded, unpacked safely into the cache.

Only regular files and folders are unpacked, each inside the cache folder (no absolute
names, no '..', no links or devices), at most MAX_MEMBERS members, and no more bytes than
the archive could honestly hold (RATIO times its size), than the disk can spare, or than
MAX_BYTES; each file is copied with a bound on its size. A member that cannot be read (a
corrupt stream, an encrypted or unknown compression) is "not a readable archive"; anything
else is one line naming the member. Whatever a refused archive unpacked is removed.

The archive is unpacked once: its cache folder is keyed on its bytes (SHA-256, which the
card gives as the file the user has) and its name, never on a path, size or time that
another file can copy. `.archive.json` in that folder records both.
Its release folder is named as in the archive, or after the archive when it unpacks flat; an
archive with more than one top-level entry is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Any

from albert_lab.checkpoint.files import check_regular, file_identity
from albert_lab.checkpoint.release import CONFIGS, release_family
from albert_lab.checkpoint.sources import sha256
from albert_lab.checkpoint.store import remove_dead_temporaries
from albert_lab.errors import CheckpointError
from albert_lab.paths import cache_dir

SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
MAX_MEMBERS = 1_000
MAX_BYTES = 16 << 30  # the largest release (ALBERT-xxlarge with its optimizer slots) is a few GB
# float32 weights barely compress (a release's .tar.gz is ~0.93 of its content): 10x is far beyond
# any release, and a bomb stops there; FLOOR lets small archives of text hold what they hold
RATIO, FLOOR = 10, 256 << 20
RESERVE = 512 << 20  # left free on the cache's disk after unpacking
ARCHIVE_CARD = ".archive.json"  # in an archive's unpacked folder: {"name", "sha256", "bytes"} of the archive
_HASHES: dict[tuple[int, ...], str] = {}  # (dev, inode, size, mtime, ctime) -> SHA-256 in this process


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(SUFFIXES)


def archive_sha256(archive: Path) -> str:
    """The archive's SHA-256, hashed once per process while it stays the same file (its change
    time, which no user can set, is part of the memo's key)."""
    key = file_identity(archive.resolve())
    if key not in _HASHES:
        _HASHES[key] = sha256(archive)
    return _HASHES[key]


def _unpacked_folder(archive: Path) -> Path:
    """Where the archive's copy is unpacked in the cache: keyed on its bytes and its name."""
    key = hashlib.sha256(f"{archive_sha256(archive)}|{archive.name}".encode()).hexdigest()[:32]
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
        remove_dead_temporaries(out.parent)
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            _unpack(archive, tmp)
            _name_flat(tmp, archive)
            _release_in(archive, tmp)  # an archive that holds no release, or several, is not kept
            (tmp / ARCHIVE_CARD).write_text(json.dumps({"name": archive.name, "sha256": archive_sha256(archive),
                                                        "bytes": archive.stat().st_size}))
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
    return _release_in(archive, out)


def unpacked_from(folder: Path) -> dict[str, Any] | None:
    """The archive a release folder was unpacked from ({"name", "sha256", "bytes"}), or None."""
    root = cache_dir() / "releases" / "unpacked"
    for above in [folder, *folder.parents]:
        if above.parent == root:
            try:
                return json.loads((above / ARCHIVE_CARD).read_text())
            except (OSError, ValueError):
                return None
        if above == root:
            break
    return None


def _release_in(archive: Path, folder: Path) -> Path:
    """The release folder in `folder` (a config beside a checkpoint's index), where `archive` was unpacked."""
    found = sorted({p.parent for name in CONFIGS.values() for p in folder.rglob(name) if release_family(p.parent)})
    if not found:
        raise CheckpointError(f"{archive} holds no albert_config.json or bert_config.json beside a TensorFlow checkpoint: "
                              "not one of Google's original releases; unpack it and give the folder that holds config.json")
    tops = sorted(p.name for p in folder.iterdir() if p.name not in ("__MACOSX", ARCHIVE_CARD))  # macOS's zip adds that folder
    if len(found) > 1 or len(tops) > 1:
        shown = ", ".join(str(p.relative_to(folder)) for p in found[:3]) if len(found) > 1 else ", ".join(tops[:3])
        raise CheckpointError(f"{archive} holds {'several releases' if len(found) > 1 else f'{len(tops)} top-level entries'} "
                              f"({shown}{', ...' if max(len(found), len(tops)) > 3 else ''}); a release's archive holds one "
                              "folder: unpack it and give the release's folder")
    return found[0]


def _budget(archive: Path, into: Path) -> int:
    """The most bytes `archive` may unpack to: RATIO times its size (at least FLOOR), what the disk
    holding `into` can spare, and MAX_BYTES."""
    free = shutil.disk_usage(into).free - RESERVE
    return min(MAX_BYTES, max(RATIO * archive.stat().st_size, FLOOR), free)


def _unpack(archive: Path, into: Path) -> None:
    budget = _budget(archive, into)
    with _members(archive) as (members, declared):
        if declared is not None and declared > budget:
            raise _too_big(archive, declared, budget)
        total = 0
        for count, (name, kind, size, read) in enumerate(members, 1):
            if count > MAX_MEMBERS:
                raise CheckpointError(f"{archive} holds more than {MAX_MEMBERS:,} members; not a release archive")
            total += size
            if total > budget:
                raise _too_big(archive, total, budget)
            _unpack_member(archive, into, name, kind, size, read)


def _too_big(archive: Path, size: int, budget: int) -> CheckpointError:
    return CheckpointError(f"{archive} unpacks to more than {budget / 2**20:,.0f} MiB ({size / 2**20:,.0f} MiB or more), more than "
                           f"a release of its size holds ({RATIO}x) or than the cache's disk can spare; not a release archive")


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
def _reading(archive: Path) -> Iterator[None]:
    """Any failure to read the archive (a corrupt stream, an encrypted member, an unknown
    compression method, a lying header) is one line: not a readable archive."""
    kind = "zip" if archive.name.lower().endswith(".zip") else "tar"
    try:
        yield
    except CheckpointError:
        raise
    except Exception as err:  # zlib.error, RuntimeError (encrypted), NotImplementedError (method), EOFError, OSError ...
        said = " ".join(str(err).split())  # tarfile's own reasons run over several lines
        reason = f"{type(err).__name__}: {said[:80]}" if said else type(err).__name__
        raise CheckpointError(f"{archive} is not a readable {kind} archive ({reason}); download it again") from None


@contextmanager
def _members(archive: Path) -> Iterator[tuple[Iterator[Member], int | None]]:
    """The archive's members, and the bytes they declare where that is known before reading (zip)."""
    if archive.name.lower().endswith(".zip"):
        with _reading(archive):
            handle = zipfile.ZipFile(archive)
        with handle:
            yield _zip_members(archive, handle), sum(i.file_size for i in handle.infolist())
    else:
        with _reading(archive):
            handle = tarfile.open(archive, "r:*")  # noqa: SIM115 (closed below; opened apart to name a bad archive)
        with handle:
            yield _tar_members(archive, handle), None
            _check_tar_end(archive, handle)


def _check_tar_end(archive: Path, handle: tarfile.TarFile) -> None:
    """tarfile ends an archive quietly at a damaged header: what follows the last member must be the
    archive's end, zero blocks, and a compressed stream must decompress to its end (its CRC checked)."""
    with _reading(archive):
        while chunk := handle.fileobj.read(1 << 20):
            if chunk.count(0) != len(chunk):
                raise CheckpointError(f"{archive} is not a readable tar archive (a damaged header after "
                                      f"{len(handle.members):,} members); download it again")


def _tar_members(archive: Path, handle: tarfile.TarFile) -> Iterator[Member]:
    members = iter(handle)
    while True:
        with _reading(archive):
            member = next(members, None)
        if member is None:
            return
        if member.isdir():
            yield member.name, "dir", 0, None
        elif member.isfile():
            with _reading(archive):
                reader = handle.extractfile(member)
            yield member.name, "file", member.size, reader
        else:
            kind = "a link" if member.issym() or member.islnk() else "a device or FIFO"
            raise CheckpointError(f"{archive}: member {member.name[:120]!r} is {kind}; a release holds only files: "
                                  "download it again from its source")


def _zip_members(archive: Path, handle: zipfile.ZipFile) -> Iterator[Member]:
    for info in handle.infolist():
        kind = stat.S_IFMT(info.external_attr >> 16)  # 0 where only permission bits are set (Python's writestr)
        if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
            raise CheckpointError(f"{archive}: member {info.filename[:120]!r} is a link or special file; a release holds "
                                  "only files: download it again from its source")
        if info.is_dir():
            yield info.filename, "dir", 0, None
        else:
            with _reading(archive):
                reader = handle.open(info)
            yield info.filename, "file", info.file_size, reader


def _unpack_member(archive: Path, root: Path, name: str, kind: str, size: int, read: IO[bytes] | None) -> None:
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p != "."]
    if name.startswith(("/", "\\")) or ".." in parts or any(":" in p for p in parts[:1]):
        raise CheckpointError(f"{archive}: member {name[:120]!r} would land outside the folder it is unpacked into; "
                              "a release never holds such names: download it again from its source")
    if not parts:  # "./", the folder itself (tar -C dir -czf x.tar.gz .)
        if kind == "dir":
            return
        raise CheckpointError(f"{archive}: member {name[:120]!r} has no name; download it again from its source")
    target = root.joinpath(*parts)
    if kind == "dir":
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    assert read is not None
    written = 0
    with read, open(target, "xb") as out:
        while True:
            with _reading(archive):
                chunk = read.read(1 << 20)
            if not chunk:
                break
            written += len(chunk)
            if written > size:
                raise CheckpointError(f"{archive}: member {name[:120]!r} holds more bytes than its header says; download it again")
            out.write(chunk)
