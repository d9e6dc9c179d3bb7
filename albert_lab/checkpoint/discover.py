"""Finding checkpoints: a folder made loadable before loading (an interrupted save
recovered, a release converted; saying what it is instead when it is not one), its
summary from its files alone, the shipped checkpoints and finished runs, and a listed
name resolved to its folder. No torch, no transformers."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from albert_lab.checkpoint.archive import MAX_MEMBERS, is_archive, is_unpacked, unpacked_release
from albert_lab.checkpoint.files import (
    CARD,
    CONFIG,
    PICKLE_SUFFIXES,
    WEIGHTS,
    check_file_kinds,
    checkpoint_label,
    read_card,
    read_config,
    read_spec,
    safetensors_keys,
)
from albert_lab.checkpoint.heads import MLM_KEYS, PAIR_KEYS, HeadStatus, head_status
from albert_lab.checkpoint.release import CONFIGS, release_family
from albert_lab.checkpoint.release_convert import converted_release
from albert_lab.checkpoint.store import recover_interrupted_save
from albert_lab.errors import AlbertLabError, CheckpointError
from albert_lab.paths import cache_dir, checkpoints_dir, runs_dir, user_path
from albert_lab.runfolder import RunFolder
from albert_lab.spec import ModelSpec


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


# ---- a checkpoint without loading it --------------------------------------------------------
@dataclass(frozen=True)
class CheckpointSummary:
    """A checkpoint folder as its files describe it; the same fields a ModelBundle has
    for a model card (name, source, spec, heads, card), without the model."""

    name: str
    source: str
    spec: ModelSpec
    heads: HeadStatus
    card: dict[str, Any] = field(default_factory=dict)


def checkpoint_name(given: Path, name: str | None = None) -> str:
    """What a checkpoint given as `given` is called (`name` if given; else files.checkpoint_label). An
    archive of one of Google's releases is called what `import-tf` calls it, after the release folder it
    unpacks to (a flat archive's is its file name less .tar.gz, .tgz, .tar or .zip): albert_base_v2.tar.gz
    holds albert_base; the file's name, suffix and all, was the sidebar's."""
    if name is None and given.is_file() and is_archive(given) and is_unpacked(given):
        return unpacked_release(given).name  # unpacked already (make_loadable): a look, not a second unpacking
    return checkpoint_label(given.absolute(), name)


def summarize_checkpoint(folder: str | Path, name: str | None = None) -> CheckpointSummary | None:
    """The summary of a local safetensors checkpoint; None where only loading can tell
    (pickled or sharded weights). Raises CheckpointError for folders that cannot load."""
    given = user_path(str(folder).strip(), "checkpoint")
    path = make_loadable(given)
    files = sorted(path.glob("*.safetensors"))
    if [f.name for f in files] != [WEIGHTS]:
        return None
    card = read_card(path)
    spec = read_spec(path, card)
    keys = safetensors_keys(files[0])
    # What from_pretrained reports missing for a head: its prefix absent from the file
    # (files from *ForMaskedLM / base models keep the encoder under the same prefix).
    missing = {prefix for prefix in (MLM_KEYS[spec.family], PAIR_KEYS[spec.family])
               if not any(k.startswith(prefix) for k in keys)}
    return CheckpointSummary(name=checkpoint_name(given, name), source=str(folder).strip(), spec=spec,
                             heads=head_status(spec, missing, card),
                             card=card)


# ---- discovery -------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckpointInfo:
    name: str
    path: Path
    origin: Literal["shipped", "run", "converted"]
    family: str
    objective: str
    label: str
    card: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def uptrained(self) -> bool:
        """Trained from another checkpoint's weights (`train --init-from`), as its card records."""
        return bool(self.card.get("provenance", {}).get("init_from"))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "origin": self.origin, "family": self.family,
                "objective": self.objective, "label": self.label, "uptrained": self.uptrained,
                "metrics": self.card.get("metrics", {})}


def discover_checkpoints(shipped: Path | None = None, runs: Path | None = None) -> list[CheckpointInfo]:
    """Shipped checkpoints (sub-folders of checkpoints/), finished runs' checkpoints, and
    conversions saved in the runs folder (`albertize --out runs/NAME`, or runs/albertized/NAME
    and runs/relaxed/NAME from the app), named 'converted:NAME'."""
    found = []
    shipped = shipped or checkpoints_dir()
    for folder in sorted(shipped.iterdir()) if shipped.is_dir() else []:
        if (folder / CONFIG).is_file():
            found.append(_info(folder.name, folder, "shipped"))
    runs = runs or runs_dir()
    for run in sorted(runs.iterdir()) if runs.is_dir() else []:
        folder = RunFolder(run).checkpoint
        if run.is_dir() and not run.name.startswith("."):
            recover_interrupted_save(folder)
        if (folder / CONFIG).is_file() and _run_finished(run):
            found.append(_info(f"run:{run.name}", folder, "run"))
    names = set()
    for folder in _conversions(runs):  # runs/NAME first; runs/albertized/NAME, if that name is taken, by its path
        info = _info(f"converted:{folder.name}" if folder.name not in names else f"converted:{folder.parent.name}/{folder.name}",
                     folder, "converted")
        if info is not None and "conversion" in info.card:  # converted (albertize), not trained
            names.add(folder.name)
            found.append(info)
    return [info for info in found if info is not None]


CONVERSIONS = ("albertized", "relaxed")  # the runs folder's sub-folders the app converts into (albertize, relax)


def _conversions(runs: Path) -> list[Path]:
    """Checkpoint folders in the runs folder itself or in its CONVERSIONS sub-folders; a folder
    that cannot be read is skipped."""
    folders = []
    for parent in (runs, *(runs / name for name in CONVERSIONS)):
        try:
            folders += [p for p in sorted(parent.iterdir()) if (p / CONFIG).is_file()] if parent.is_dir() else []
        except OSError:
            continue
    return folders


def _run_finished(run: Path) -> bool:
    try:
        return RunFolder(run).read().get("status") in ("succeeded", "cancelled")
    except (OSError, ValueError, AttributeError, RecursionError):
        return False


def _info(name: str, folder: Path, origin: Literal["shipped", "run", "converted"]) -> CheckpointInfo | None:
    try:
        card = read_card(folder)
        spec = read_spec(folder, card)
    except (AlbertLabError, OSError, ValueError):
        return None  # unreadable folders are reported when someone tries to load them
    return CheckpointInfo(name=name, path=folder, origin=origin, family=spec.family, objective=spec.objective,
                          label=spec.label, card=card)


def resolve_checkpoint(name_or_path: str) -> str:
    """A name listed by discover_checkpoints (e.g. 'albert-sop', 'run:ID') or a packaged
    model's name ('minilm', sources.PACKAGED) -> its folder; anything else is returned
    unchanged (a path or hub id)."""
    from albert_lab.checkpoint.sources import PACKAGED, resolve_packaged

    for info in discover_checkpoints():
        if info.name == name_or_path:
            return str(info.path)
    if name_or_path in PACKAGED and not Path(name_or_path).exists():
        return str(resolve_packaged(name_or_path))
    return name_or_path
