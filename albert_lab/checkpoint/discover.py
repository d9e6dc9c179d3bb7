"""Finding checkpoints: a folder's summary from its files alone (made loadable first:
checkpoint.loadable), the shipped checkpoints, finished runs and conversions listed, and a
listed name resolved to its folder. No torch, no transformers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from albert_lab.checkpoint.archive import is_archive, is_unpacked, unpacked_release
from albert_lab.checkpoint.files import CONFIG, WEIGHTS, checkpoint_label, read_card, read_spec, safetensors_keys
from albert_lab.checkpoint.heads import MLM_KEYS, PAIR_KEYS, HeadStatus, head_status
from albert_lab.checkpoint.loadable import make_loadable
from albert_lab.checkpoint.store import recover_interrupted_save
from albert_lab.errors import AlbertLabError
from albert_lab.paths import checkpoints_dir, runs_dir, user_path
from albert_lab.runfolder import RunFolder
from albert_lab.spec import ModelSpec


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
