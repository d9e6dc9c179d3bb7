"""A folder made loadable before loading: an interrupted save recovered, one of Google's releases
(its folder or its archive) converted once into the cache, a sentence-transformers folder's module
found; else one line saying what it is instead and what to give. Outputs are kept out of folders a
command could load. No torch, no transformers."""

from __future__ import annotations

import json
import os
from pathlib import Path

from albert_lab.checkpoint.archive import MAX_MEMBERS, is_archive, unpacked_release
from albert_lab.checkpoint.files import CARD, CONFIG, PICKLE_SUFFIXES, check_file_kinds, read_config, safetensors_keys
from albert_lab.checkpoint.release import CONFIGS, release_family
from albert_lab.checkpoint.release_convert import converted_release
from albert_lab.checkpoint.store import recover_interrupted_save
from albert_lab.errors import CheckpointError
from albert_lab.paths import cache_dir, checkpoints_dir
from albert_lab.runfolder import RunFolder


def make_loadable(path: Path, allow_pickle: bool = False) -> Path:
    """`path` made a loadable checkpoint folder, or a CheckpointError that says what is wrong.
    It writes where it must: a save interrupted in `path` is recovered, and one of Google's
    original releases (its folder, or its .tar.gz / .zip) is converted once into the cache,
    whose folder is returned."""
    recover_interrupted_save(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no such folder")
    if release := _release_folder(path):
        return converted_release(release)
    if path.is_file():
        raise CheckpointError(_file_hint(path))
    check_file_kinds(path)
    path = sentence_transformers_module(path)
    check_file_kinds(path)
    if not (path / CONFIG).is_file():
        raise CheckpointError(f"{path} has no config.json, so it is not a transformers checkpoint folder{_folder_hint(path)}")
    model_type = read_config(path).get("model_type")
    if model_type not in ("albert", "bert"):
        raise CheckpointError(f"unsupported model type {model_type!r} in {path / CONFIG}; "
                              "ALBERT Lab loads 'albert' and 'bert' checkpoints")
    safetensors = sorted(path.glob("*.safetensors"))
    if safetensors:
        for file in safetensors:
            safetensors_keys(file)
        return path
    pickles = sorted(p.name for p in path.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if not pickles:
        raise CheckpointError(f"{path} has a config.json but no weights (model.safetensors)")
    if not allow_pickle:
        raise CheckpointError(f"{path} holds only pickled weights ({', '.join(pickles)}), and a pickle can run code "
                              "when loaded; convert it to safetensors, or allow pickles (--allow-pickle) if you trust it")
    return path


def _holds_a_checkpoint(folder: Path) -> bool:
    """Whether a command could load `folder`, or what it holds: a checkpoint (its card, or config.json
    beside weights), a sentence-transformers folder, a run's folder, or one of Google's releases."""
    try:
        if not folder.is_dir():
            return False
        if (folder / CARD).is_file() or (folder / "modules.json").is_file() or RunFolder(folder).is_run() or release_family(folder):
            return True
        return (folder / CONFIG).is_file() and any(p.suffix in (".safetensors", *PICKLE_SUFFIXES) for p in folder.iterdir())
    except OSError:  # unreadable: nothing a command could load from it either
        return False


def check_outside_checkpoints(out: Path, flag: str) -> None:
    """Refuse an output (a file, or a folder to make) at or inside a folder a command could load, or
    the cache (symlinks resolved): writing there would change a checkpoint (a CSV over its config.json)
    or what is served from the cache. Nor over a release's archive, which commands load too, or a file
    the app reads beside the shipped checkpoints (checkpoints/results.json). A new folder or file beside
    the checkpoints (checkpoints/NAME) is no such place."""
    real, cache = Path(os.path.realpath(out)), Path(os.path.realpath(cache_dir()))
    if real.is_file() and (is_archive(real) or real.parent == Path(os.path.realpath(checkpoints_dir()))):
        what = "a release's archive, which commands load" if is_archive(real) else "a file the app reads beside the checkpoints"
        raise CheckpointError(f"{flag} {out} is {what}, which writing would replace; give a new path")
    found = next((f for f in [real, *real.parents] if f == cache or _holds_a_checkpoint(f)), None)
    if found is None:
        return
    what = "ALBERT Lab's cache (ALBERT_LAB_CACHE)" if found == cache else "a checkpoint folder"
    if found == real:
        raise CheckpointError(f"{flag} {out} exists and is {what}, which writing would change; give a new path")
    raise CheckpointError(f"{flag} {out} lies inside {what} ({found}), which writing would change; give a path outside it")


def _release_folder(path: Path) -> Path | None:
    """The release folder `path` is, or unpacks to (an archive holding a release config); else None."""
    if path.is_file() and is_archive(path) and _lists_release_config(path):
        return unpacked_release(path)
    return path if release_family(path) else None


def _lists_release_config(archive: Path) -> bool:
    """Whether an archive's member list names albert_config.json or bert_config.json (read, not unpacked)."""
    import tarfile
    import zipfile

    wanted = tuple(f"/{name}" for name in CONFIGS.values())
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as handle:
                names = handle.namelist()[:MAX_MEMBERS]
        else:
            with tarfile.open(archive, "r:*") as handle:
                names = [m.name for _, m in zip(range(MAX_MEMBERS), handle)]
    except Exception:  # zlib.error, RuntimeError and the like too: unpacking says what is wrong, or it is no release
        return False
    return any(f"/{n}".endswith(wanted) for n in names)


def sentence_transformers_module(path: Path) -> Path:
    """The folder of the Transformer module of a sentence-transformers folder
    (modules.json names it: "" for the root, often "0_Transformer"); else `path`."""
    if (path / CONFIG).is_file() or not (path / "modules.json").is_file():
        return path
    try:
        modules = json.loads((path / "modules.json").read_text())
        found = [m.get("path", "") for m in modules if str(m.get("type", "")).endswith("Transformer")]
        found = [f for f in found if isinstance(f, str) and ".." not in f and not f.startswith("/")]
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, TypeError, RecursionError, ValueError):
        raise CheckpointError(f"{path / 'modules.json'} is not a valid sentence-transformers module list; "
                              "point at the folder that holds config.json and model.safetensors") from None
    if not found:
        raise CheckpointError(f"{path} is a sentence-transformers folder without a Transformer module in modules.json; "
                              "point at the folder that holds config.json")
    return path / found[0]


def _file_hint(path: Path) -> str:
    """One line for a file given where a folder is expected: what to point at instead."""
    import zipfile

    if zipfile.is_zipfile(path) or path.suffix.lower() in (".zip", ".tar", ".gz", ".tgz"):
        name = path.name
        suffix = next((x for x in (".tar.gz", ".tgz", ".tar", ".gz", ".zip") if name.lower().endswith(x)), path.suffix)
        stem = name[: len(name) - len(suffix)] or path.stem
        zipped = zipfile.is_zipfile(path) or suffix == ".zip"
        how = f"unzip {name} -d {stem}" if zipped else f"mkdir {stem} && tar -xf {name} -C {stem}"
        return f"{path} is an archive; unpack it (e.g. `{how}`) and give the folder that holds config.json"
    if path.name.startswith("model.ckpt") or ".data-0" in path.name or path.suffix == ".index":
        return (f"{path} is part of a TensorFlow checkpoint; give the release folder that holds it (with its "
                f"albert_config.json or bert_config.json and tokenizer), e.g. {path.parent}")
    return f"{path} is a file; give the checkpoint folder that holds it and config.json"


def _folder_hint(path: Path) -> str:
    """What a folder without config.json might be instead: a run, a TF checkpoint, a parent."""
    if RunFolder(path).is_run():
        return f"; this looks like a run folder, its checkpoint is {RunFolder(path).checkpoint}"
    if any(path.glob("*.index")) or any(path.glob("*.data-0*")):
        return ("; it holds a TensorFlow checkpoint but no albert_config.json or bert_config.json: ALBERT Lab reads "
                "Google's original releases as they unpack (README: 'The paper's own models')")
    inner = sorted(p.parent for p in path.glob(f"*/{CONFIG}"))
    if inner:
        return f"; give the folder that holds config.json, e.g. {inner[0]}"
    if any(path.glob("*.zip")):
        return "; it holds an archive: unpack it and give the folder that holds config.json"
    return "; give the folder that holds config.json and model.safetensors"
