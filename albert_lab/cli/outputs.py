"""A command's outputs, checked before any work and written without harm to its inputs: no output
is or lies inside an input (by name, or by identity: a hard link), a file output can take the
result (a folder, a missing folder, a FIFO without a reader, a full disk or no permission is
refused in one line naming the flag), and a CSV is written beside its target and renamed over it."""

from __future__ import annotations

import argparse
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from albert_lab.data.csvfile import to_csv
from albert_lab.errors import AlbertLabError

INPUT_FLAGS = {"pairs": "the pairs file", "checkpoint": "--checkpoint", "file": "--file", "corpus": "--corpus",
               "eval_corpus": "--eval-corpus", "init_from": "--init-from", "distil_from": "--distil-from",
               "tokenizer": "--tokenizer"}  # attribute -> how the message names it
CHECKPOINT_FLAGS = ("checkpoint", "init_from", "distil_from")


def command_inputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """Every local file or folder a command reads (pairs, texts, checkpoint folders by name or path,
    corpora, tokenizers), with the flag that names it; hub ids and named corpora read nothing here."""
    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.paths import user_path

    found = []
    for name, flag in INPUT_FLAGS.items():
        values = getattr(args, name, None)
        for value in values if isinstance(values, list) else [values]:
            if value is None or str(value) in ("", "-"):
                continue
            path = user_path(resolve_checkpoint(str(value)) if name in CHECKPOINT_FLAGS else value, flag)
            if os.path.lexists(path):
                found.append((flag, path))
    return found


MAX_INPUT_FILES = 10_000  # files of an input folder compared with an output by identity (a release has some 10)


def check_not_input(out: Path, inputs: Sequence[tuple[str, Path]], flag: str) -> None:
    """Refuse an output that is one of the command's inputs or lies inside one (a checkpoint folder),
    by name or by identity: a hard link has another name and the same device and inode."""
    real = Path(os.path.realpath(out))
    target = file_identity(real)
    for what, path in inputs:
        source = Path(os.path.realpath(path))
        if real == source:
            raise AlbertLabError(f"{flag} {out} is an input of this command ({what}), which writing would replace; "
                                 "give another name")
        if source in real.parents:
            raise AlbertLabError(f"{flag} {out} lies inside an input of this command ({what} {path}), which writing "
                                 "would change; give a path outside it")
        if target is not None and target in input_identities(source):
            raise AlbertLabError(f"{flag} {out} is the same file as an input of this command ({what} {path}, through a "
                                 "hard link), which writing would replace; give another name")


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of an existing regular file, else None."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def input_identities(source: Path) -> set[tuple[int, int]]:
    """The identities of an input file, or of the files in an input folder (the first MAX_INPUT_FILES)."""
    if not source.is_dir():
        return {i for i in [file_identity(source)] if i}
    found: set[tuple[int, int]] = set()
    for n, (folder, _, names) in enumerate(os.walk(source)):
        for name in names:
            if (identity := file_identity(Path(folder) / name)) is not None:
                found.add(identity)
        if n + len(found) > MAX_INPUT_FILES:
            break
    return found


def check_outputs(args: argparse.Namespace, files: Sequence[str] = ("out", "maps_out"), folders: Sequence[str] = ()) -> None:
    """The one check of a command's outputs, before any work: none is or lies inside an input
    (command_inputs) or any other checkpoint or the cache (check_outside_checkpoints), and each file
    output can take the result (check_out); a folder output gets its other checks where it is made
    (checkpoint.store.check_new_folder)."""
    from albert_lab.checkpoint.loadable import check_outside_checkpoints

    inputs = command_inputs(args)
    for name in (*files, *folders):
        out = getattr(args, name, None)
        if out is None:
            continue
        flag = "--" + name.replace("_", "-")
        check_not_input(out, inputs, flag)
        check_outside_checkpoints(out, flag)
        if name in files:
            check_out(out, flag=flag)


def check_out(out: Path | None, *inputs: Path, flag: str = "--out") -> None:
    """Refuse an --out file that cannot take the result, before any work: one of `inputs`, a folder,
    a missing folder, a symlink loop, a FIFO without a reader, a full device or disk, no permission."""
    if out is None:
        return
    check_not_input(out, [("the input file", Path(i)) for i in inputs], flag)
    try:
        info = os.stat(out)
    except FileNotFoundError:
        info = None  # a new file, or a link to one (written through the link)
    except OSError as err:
        words = "is a symlink loop" if err.errno == errno.ELOOP else f"cannot be written ({err.strerror or err})"
        raise AlbertLabError(f"{flag} {out} {words}; give another file") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise AlbertLabError(f"{flag} {out} is a folder; give a file name, e.g. {out / 'scores.csv'}")
    if not Path(os.path.realpath(out)).parent.is_dir():
        raise AlbertLabError(f"{flag} {out}: the folder {out.parent} does not exist; create it or give another file")
    if info is not None and not stat.S_ISREG(info.st_mode):
        _check_special(out, info, flag)  # a pipe, /dev/stdout, /dev/full: opened without blocking, written nothing
        return
    if out.is_symlink():
        return  # a link to a file: opening it to try would follow and create; written as it is
    existed = out.exists()
    try:  # opened to append, nothing written: a read-only file or folder (or /proc) fails here, not after the work
        with open(out, "a"):
            pass
        free = os.statvfs(out.parent).f_bavail if hasattr(os, "statvfs") else 1
    except OSError as err:
        raise AlbertLabError(f"{flag} {out} cannot be written ({err.strerror}); give another file") from None
    finally:
        if not existed:
            out.unlink(missing_ok=True)
    if free == 0:
        raise AlbertLabError(f"{flag} {out} cannot be written (the disk that holds it is full); free space or give another file")


def _check_special(out: Path, info: os.stat_result, flag: str) -> None:
    """A FIFO needs a reader (else the write waits for ever); a device must take a write (/dev/full never does)."""
    try:
        fd = os.open(out, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as err:
        if err.errno == errno.ENXIO and stat.S_ISFIFO(info.st_mode):
            raise AlbertLabError(f"{flag} {out} is a FIFO with no reader, so writing would wait for ever; start its "
                                 "reader first or give a file") from None
        raise AlbertLabError(f"{flag} {out} cannot be written ({err.strerror or err}); give another file") from None
    try:
        if not stat.S_ISFIFO(info.st_mode):
            os.write(fd, b"")  # nothing written; a full device says so here
    except OSError as err:
        raise AlbertLabError(f"{flag} {out} cannot be written ({err.strerror or err}); give another file") from None
    finally:
        os.close(fd)


def write_csv(frame: Any, out: Path, flag: str = "--out", raw: bool = False) -> None:
    """`frame` as CSV at `out`, text a spreadsheet would run as a formula with a leading ' unless
    `raw` (csvfile.to_csv); an OSError (disk filled meanwhile) is one line naming the flag. A file
    is written beside its target and renamed over it, so a file that shares its data with `out`
    (a hard link) is never written into, and a failed write leaves the old file whole; a pipe or a
    device (/dev/stdout) is written as it is."""
    real = Path(os.path.realpath(out))
    tmp = real.with_name(f".{real.name}.tmp-{os.getpid()}") if not real.exists() or real.is_file() else None
    try:
        to_csv(frame, tmp or out, raw=raw)
        if tmp is not None:
            os.replace(tmp, real)
    except OSError as err:
        raise AlbertLabError(f"{flag} {out} cannot be written ({err.strerror or err}); give another file") from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
