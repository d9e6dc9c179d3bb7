"""Checkpoints written atomically, and both halves of the recovery after a save that was
killed: the saver's (recover_checkpoint_dir, before it saves again) and the readers'
(recover_interrupted_save, before they look). torch is imported by save_checkpoint
only: readers recover without it. Beside them the reuse of a folder made before with the
same options (a conversion, a probe): one maker at a time per folder, and the lookup."""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from albert_lab.checkpoint.files import CARD, WEIGHTS, read_card
from albert_lab.errors import AlbertLabError, CheckpointError
from albert_lab.fields import ascii_int
from albert_lab.paths import nearest_existing, parents_made_for, user_path
from albert_lab.spec import ModelSpec

if TYPE_CHECKING:
    import torch

    from albert_lab.models import PretrainingModel


def _taken(out: Path) -> bool:
    """Something is at `out` that a new folder must not replace: a file, or a folder with something in it."""
    return out.exists() and (not out.is_dir() or any(out.iterdir()))


def check_new_folder(out: str | Path, flag: str = "--out") -> Path:
    """Refuse, before any work, a folder to be made that exists with something in it, or
    whose parent cannot take a new folder (a file, /proc, no permission): one line each.
    Nothing is made here: the folders above `out` are made when the result is saved
    (a conversion that fails leaves none behind)."""
    out = user_path(out, flag)
    if out.is_symlink():
        raise CheckpointError(f"{flag} {out} is a link; {flag} names a new folder: give its own path")
    if _taken(out):
        raise CheckpointError(f"{out} exists; {flag} names a new folder: remove it or give another")
    base = nearest_existing(out.parent)  # where the first new folder would be made
    probe = base / f".{out.name}.probe-{os.getpid()}"
    try:
        if not base.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, f"{base} is not a folder")
        probe.mkdir()
        probe.rmdir()
    except OSError as err:
        raise CheckpointError(f"{flag} {out} cannot be made ({err.strerror or err}); give a folder you can write to") from None
    return out


def save_checkpoint(model: PretrainingModel, tokenizer: Any, spec: ModelSpec, out_dir: str | Path,
                    card: dict[str, Any] | None = None, tokenizer_source: str | Path | None = None,
                    extra: Callable[[Path], None] | None = None, omit: tuple[str, ...] = (), new: bool = False,
                    weights: Mapping[str, torch.Tensor] | None = None) -> Path:
    """Write a checkpoint folder atomically: into a hidden sibling, then renamed into
    place, so a reader never sees a half-written checkpoint (even after kill -9).
    `extra(folder)` may add files (e.g. trainer state) before the swap. Weights whose
    names start with an `omit` prefix are left out (a head that was missing on load);
    `weights` are written in place of the model's own of those names, which the model
    keeps (a probe's head, fitted beside a model other pages share).
    With `new`, a folder that appeared at `out` meanwhile (another conversion to the same
    place) is kept and this save refused, not the other replaced. An OSError (disk full,
    no permission) is one CheckpointError naming the folder."""
    out = Path(out_dir)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    try:
        with parents_made_for(out):
            try:
                return _save(model, tokenizer, spec, out, tmp, card, tokenizer_source, extra, omit, new, weights or {})
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)  # before the folders made for it are removed
                raise
    except OSError as err:
        if new and _taken(out):
            raise CheckpointError(f"{out} was written by someone else while this one was made; it is kept, and this "
                                  "result was not saved: give another folder") from None
        raise CheckpointError(f"cannot write the checkpoint {out} ({err.strerror or err})") from None


def _save(model, tokenizer, spec, out: Path, tmp: Path, card, tokenizer_source, extra, omit, new: bool, weights) -> Path:
    import torch

    from albert_lab.tokenizer import save_tokenizer

    old = out.parent / f".{out.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    # Tied copies of partially shared modules are written in full, so plain transformers
    # loads an equivalent model. The MLM decoder's tie to the word embeddings is
    # transformers' own: its keys are left out (as save_pretrained does) and re-tied on load.
    tied = set(getattr(model, "_tied_weights_keys", None) or ())
    if spec.relaxed:  # a relaxed model's shared matrices once each, under their group's first layer
        from albert_lab.relaxed import shared_keys

        tied |= shared_keys(spec)
    state = {k: v.detach().to("cpu", torch.float32).clone().contiguous() for k, v in model.state_dict().items()
             if k not in tied and not k.startswith(omit)}
    if unknown := sorted(set(weights) - set(state)):
        raise CheckpointError(f"cannot save {out}: the model has no weight {unknown[0]} to replace")
    state.update({k: v.detach().to("cpu", torch.float32).clone().contiguous() for k, v in weights.items()})
    model.save_pretrained(str(tmp), state_dict=state)
    save_tokenizer(tokenizer, tmp, tokenizer_source or getattr(tokenizer, "name_or_path", None))
    full_card = {"format": 1, **(card or {}), "spec": spec.to_dict(), "objective": spec.objective}
    (tmp / CARD).write_text(json.dumps(full_card, indent=2, default=str))
    if extra is not None:
        extra(tmp)
    _fsync_tree(tmp)
    if out.exists() and not new:
        os.replace(out, old)
    os.replace(tmp, out)  # with `new`: onto nothing or an empty folder; onto a full one rename(2) refuses
    shutil.rmtree(old, ignore_errors=True)
    return out


def recover_checkpoint_dir(out: Path) -> None:
    """Clean up after a save that was killed: if it died between its two renames, bring
    the old copy back; then remove half-written (.tmp-*) and superseded (.old-*) copies."""
    olds = sorted(out.parent.glob(f".{out.name}.old-*"), key=lambda p: p.stat().st_mtime)
    if not out.exists() and olds:  # readers do this too (recover_interrupted_save, below), if the saver is gone
        os.replace(olds.pop(), out)
    for stale in [*olds, *out.parent.glob(f".{out.name}.tmp-*")]:
        shutil.rmtree(stale, ignore_errors=True)


def _fsync_tree(folder: Path) -> None:
    for file in folder.iterdir():
        with open(file, "rb") as handle:
            os.fsync(handle.fileno())
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def recover_interrupted_save(out: Path) -> bool:
    """Readers' half of atomic checkpoint saves (save_checkpoint renames the
    old copy to `.<name>.old-<pid>`, then the new one into place): a save killed between
    the two renames leaves no `out`. Whoever reads first brings the old copy back, when the
    process that was saving is gone; a live one is mid-save and finishes it itself."""
    if out.exists():
        return False
    olds = [p for p in out.parent.glob(f".{out.name}.old-*") if not _pid_alive(p.name.rsplit("-", 1)[-1])]
    for old in sorted(olds, key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            os.replace(old, out)
            return True
        except OSError:  # another reader was first
            if out.exists():
                return True
    return False


def remove_dead_temporaries(folder: Path) -> None:
    """Remove the half-made `.<name>.tmp-<pid>` entries in `folder` whose process is gone: a
    conversion or unpacking killed midway (SIGKILL, a power cut) cannot remove its own."""
    try:
        found = list(folder.glob(".*.tmp-*"))
    except OSError:
        return
    for stale in found:
        if not _pid_alive(stale.name.rsplit("-", 1)[-1]):
            shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)


def _pid_alive(text: str) -> bool:
    pid = ascii_int(text)
    if pid is None or pid < 0:  # '²' passed str.isdigit() and then int() raised
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone, or a number no pid can be
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


# ---- a folder made before with the same options, reused ------------------------------------
@contextmanager
def one_maker(root: Path, kind: str) -> Iterator[None]:
    """Hold `root/.<kind>.lock` (made with `root`): one maker of `kind` folders under `root` at
    a time, so clicks at once neither make the same folder twice nor hold two models in memory."""
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{kind}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def find_made(root: Path, section: str, options: dict[str, Any]) -> Path | None:
    """A finished checkpoint under `root` whose card records exactly `options` as
    `<section>.options` (a conversion's, a probe's), if there is one."""
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.name.startswith(".") or not (folder / CARD).is_file() or not (folder / WEIGHTS).is_file():
            continue
        try:
            record = read_card(folder).get(section)
        except (AlbertLabError, OSError):  # a damaged card is no match
            continue
        if isinstance(record, dict) and record.get("options") == options:
            return folder
    return None


def source_identity(source: str | Path) -> dict[str, Any]:
    """What identifies the checkpoint a folder was made from, in its `options`: the source named
    as every machine can (a folder outside the project by its weights' SHA-256) and its files'
    stamp, so a rewritten source is made afresh; a hub id by name."""
    from albert_lab.checkpoint.files import is_local_source, stamp
    from albert_lab.checkpoint.sources import describe_source

    local = is_local_source(str(source))
    return {"source": describe_source(source) if local else str(source), "source_stamp": stamp(source) if local else 0.0}


def made_once(root: Path, section: str, options: dict[str, Any], source: str | Path, make: Callable[[], Path],
              quota: int | None = None, adding: int | None = None) -> tuple[Path, bool]:
    """(folder, reused): the folder under `root` whose card records `options` as `<section>.options`,
    or the one `make()` writes. One maker of `section` folders per `root` at a time; with `quota`
    (bytes), a new one is refused before the work when `root`'s parent would pass it with `adding`
    bytes (planned_bytes; None: a copy of `source`'s folder)."""
    from albert_lab.limits import check_disk_quota, folder_bytes

    with one_maker(root, section):
        if (found := find_made(root, section, options)) is not None:
            return found, True
        if quota is not None:
            local = Path(str(source)).expanduser()
            adding = adding if adding is not None else folder_bytes(local) if local.is_dir() else 0
            check_disk_quota(root.parent, adding, quota, what=f"this {section}")
        return make(), False


SAVED_BYTES = 4  # a saved parameter: float32
FILES_ALLOWANCE = 64 << 10  # beside the parameters: the weights file's header (a name and shape a tensor), the card, whole blocks
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".h5", ".msgpack", ".ckpt", ".pt", ".pth")


def planned_bytes(source: str | Path, spec_of: Callable[[ModelSpec], ModelSpec]) -> int | None:
    """The bytes a model made from the local checkpoint `source` will take before it is written: the
    parameters of `spec_of(source's spec)` (heads too) in float32, the source's files beside its
    weights (tokenizer, vocabulary), which it keeps, and FILES_ALLOWANCE; read from the files, no weight loaded. None where
    only loading can tell (a hub id, pickled or sharded weights). A full-rank relaxed model is 1.44
    times its source: the source's size let the runs budget be passed by a model's size."""
    from albert_lab.checkpoint.discover import summarize_checkpoint
    from albert_lab.checkpoint.files import is_local_source
    from albert_lab.checkpoint.loadable import make_loadable
    from albert_lab.params import count

    if not is_local_source(str(source)) or (summary := summarize_checkpoint(source)) is None:
        return None
    folder = make_loadable(user_path(str(source).strip(), "checkpoint"))
    kept = sum(f.stat().st_size for f in folder.iterdir() if f.is_file() and not f.name.endswith(WEIGHT_SUFFIXES))
    return count(spec_of(summary.spec)).total_with_heads * SAVED_BYTES + kept + FILES_ALLOWANCE
