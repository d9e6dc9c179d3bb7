"""What a checkpoint folder is, read from its files alone: no torch, no transformers.

albert_lab.json (spec, objective, provenance, metrics), config.json and the safetensors
header (the tensor names) say what a model card needs: the spec, and which heads are
trained, untrained or missing. Listing checkpoints and showing a card therefore cost
milliseconds, and the app paints its first page before torch and transformers (~3 s of
imports on a 2-core CPU) are loaded. checkpoints.load_checkpoint builds on the same
functions, so a summary and a loaded model always agree on the heads.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from albert_lab.errors import AlbertLabError, CheckpointError
from albert_lab.paths import checkpoints_dir, runs_dir
from albert_lab.runfolder import RunFolder
from albert_lab.spec import ModelSpec

CARD = "albert_lab.json"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
PAIR_KEYS = {"albert": "sop_classifier.", "bert": "cls.seq_relationship."}
MLM_KEYS = {"albert": "predictions.", "bert": "cls.predictions."}
HeadState = Literal["trained", "untrained", "missing", "present", "probe"]


@dataclass(frozen=True)
class HeadStatus:
    """What a checkpoint's heads can be trusted with.

    trained:   weights present and trained by this project (per albert_lab.json);
    untrained: weights present but never trained (objective 'none');
    missing:   not in the checkpoint: transformers initialised them randomly;
    present:   weights present, provenance unknown (e.g. a hub checkpoint);
    probe:     a pair head fitted on the frozen encoder (`albert-lab fit-head`).
    """

    mlm: HeadState
    pair: HeadState
    pair_kind: Literal["sop", "nsp"]  # what the pair head predicts; label 0 = original order / is next
    family: Literal["albert", "bert"] = "albert"

    @property
    def pair_usable(self) -> bool:
        return self.pair in ("trained", "present", "probe")

    @property
    def missing(self) -> list[str]:
        """The missing heads by name, e.g. ['MLM head', 'NSP head']."""
        return [f"{name} head" for name, state in (("MLM", self.mlm), (self.pair_kind.upper(), self.pair)) if state == "missing"]

    @property
    def warning(self) -> str | None:
        kind, notes = self.pair_kind.upper(), []
        if self.missing:
            one = len(self.missing) == 1
            uses = " and ".join(use for use, state in (("masked-token predictions", self.mlm), (f"{kind} scores", self.pair))
                                if state == "missing")
            notes.append(f"The {' and '.join(self.missing)} weights are missing from this checkpoint: "
                         f"transformers would initialise {'it' if one else 'them'} randomly, so {uses} would be noise; "
                         "none are computed.")
            if self.pair == "missing":
                hub = " (the model hub's ALBERT checkpoints ship without it)" if self.family == "albert" else ""
                notes.append(f"An {kind} probe can be fitted on the frozen encoder with `albert-lab fit-head`{hub}.")
        if self.pair == "untrained":
            notes.append(f"This model was trained without an inter-sentence loss: its {kind} head was never trained.")
        if self.pair == "probe":
            notes.append(f"The {kind} head is a probe on a frozen encoder, fitted after pretraining, not trained with the model.")
        return " ".join(notes) or None


def head_status(spec: ModelSpec, missing: set[str], card: dict[str, Any]) -> HeadStatus:
    """Missing weights win; then what the card records (the training loop writes
    `heads`); then the objective the card names; without a card, 'present'."""
    recorded = card.get("heads", {})

    def state(prefix: str, head: str, trained: bool) -> HeadState:
        if any(k.startswith(prefix) for k in missing):
            return "missing"
        if not card:
            return "present"
        return recorded.get(head) or ("trained" if trained else "untrained")

    objective = spec.objective
    kind: Literal["sop", "nsp"] = objective if objective in ("sop", "nsp") else ("sop" if spec.family == "albert" else "nsp")
    return HeadStatus(mlm=state(MLM_KEYS[spec.family], "mlm", True),
                      pair=state(PAIR_KEYS[spec.family], "pair", objective != "none"), pair_kind=kind, family=spec.family)


def is_local_source(text: str) -> bool:
    """A hub id is `name` or `org/name`; anything else, an existing path, or a path whose
    first part exists here (`checkpoints/typo`) is a local folder."""
    return (Path(text).expanduser().exists() or text.startswith((".", "/", "~")) or not HUB_ID.match(text)
            or Path(text.split("/")[0]).is_dir())


# ---- files ------------------------------------------------------------------------------
def read_card(folder: Path) -> dict[str, Any]:
    file = folder / CARD
    if not file.is_file():
        return {}
    card = _read_json_object(file, "fix or delete it")
    for key in ("spec", "heads", "metrics"):
        if key in card and not isinstance(card[key], dict):
            raise CheckpointError(f"{file}: {key!r} is {_kind(card[key])}, expected an object; fix or delete the file")
    return card


def _read_json_object(file: Path, advice: str) -> dict[str, Any]:
    """A JSON file that must hold an object; one-line CheckpointError naming the file otherwise."""
    try:
        data = json.loads(file.read_bytes())
    except (ValueError, RecursionError) as err:  # JSONDecodeError, UnicodeDecodeError, 4,300-digit integers
        message = err.msg if isinstance(err, json.JSONDecodeError) else type(err).__name__
        raise CheckpointError(f"{file} is not valid JSON ({message}); {advice}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{file} holds {_kind(data)}, expected a JSON object; {advice}")
    return data


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


# safetensors dtypes and their sizes in bytes (the format's own list)
SAFETENSORS_DTYPES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
                      "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}


def safetensors_keys(file: Path) -> set[str]:
    """Tensor names from a safetensors header (8-byte length, JSON), checking what the
    loader would trip on: an object of tensors with a known dtype, a shape, and byte
    offsets that tile the data exactly (no overlaps, no gaps), all of it in the file."""
    damaged = f"{file} is damaged or truncated"
    advice = "re-copy or re-train the checkpoint"
    try:
        with file.open("rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > 100_000_000:
                raise CheckpointError(f"{damaged} (header of {length} bytes); {advice}")
            header = json.loads(handle.read(length))
    except (struct.error, ValueError, RecursionError) as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CheckpointError(f"{damaged} (unreadable header: {type(err).__name__}); {advice}") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{damaged} (the header is {_kind(header)}, not an object of tensors); {advice}")
    spans = sorted(_tensor_span(file, name, entry) for name, entry in header.items() if name != "__metadata__")
    end = 0
    for begin, stop, name in spans:
        if begin != end:
            what = "overlaps the tensor before it" if begin < end else "leaves a gap before it"
            raise CheckpointError(f"{damaged} (tensor {name!r} {what}: bytes {begin}-{stop}); {advice}")
        end = stop
    expected, actual = 8 + length + end, file.stat().st_size
    if actual < expected:
        raise CheckpointError(f"{damaged} ({actual:,} of {expected:,} bytes); {advice}")
    return {name for name in header if name != "__metadata__"}


def _tensor_span(file: Path, name: str, entry: object) -> tuple[int, int, str]:
    """(begin, end, name) of one header entry, after checking its dtype, shape and size."""
    def bad(what: str) -> CheckpointError:
        return CheckpointError(f"{file} is damaged: tensor {name[:80]!r} {what}; re-copy or re-train the checkpoint")

    if not isinstance(entry, dict):
        raise bad(f"is described by {_kind(entry)}, not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in SAFETENSORS_DTYPES:
        raise bad(f"has an unknown dtype {str(dtype)[:20]!r}; known: {', '.join(SAFETENSORS_DTYPES)}")
    is_count = lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0
    if not isinstance(shape, list) or not all(is_count(d) for d in shape):
        raise bad("has a shape that is not a list of sizes")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(is_count(o) for o in offsets) and offsets[0] <= offsets[1]):
        raise bad("has data_offsets that are not two increasing byte positions")
    size = SAFETENSORS_DTYPES[dtype]
    for dim in shape:
        size *= dim
    if offsets[1] - offsets[0] != size:
        raise bad(f"takes {offsets[1] - offsets[0]} bytes, but its dtype and shape need {size}")
    return offsets[0], offsets[1], name


def recover_interrupted_save(out: Path) -> bool:
    """Readers' half of atomic checkpoint saves (checkpoints.save_checkpoint renames the
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


def _pid_alive(text: str) -> bool:
    if not text.isdigit():
        return False
    pid = int(text)
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone, or a number no pid can be
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def check_folder(path: Path, allow_pickle: bool = False) -> Path:
    """A loadable checkpoint folder, or a CheckpointError that says what is wrong."""
    recover_interrupted_save(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no such folder")
    if path.is_file():
        raise CheckpointError(_file_hint(path))
    path = sentence_transformers_module(path)
    if not (path / "config.json").is_file():
        raise CheckpointError(f"{path} has no config.json, so it is not a transformers checkpoint folder{_folder_hint(path)}")
    model_type = read_config(path).get("model_type")
    if model_type not in ("albert", "bert"):
        raise CheckpointError(f"unsupported model type {model_type!r} in {path / 'config.json'}; "
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


def sentence_transformers_module(path: Path) -> Path:
    """The folder of the Transformer module of a sentence-transformers folder
    (modules.json names it: "" for the root, often "0_Transformer"); else `path`."""
    if (path / "config.json").is_file() or not (path / "modules.json").is_file():
        return path
    try:
        modules = json.loads((path / "modules.json").read_text())
        found = [m.get("path", "") for m in modules if str(m.get("type", "")).endswith("Transformer")]
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, TypeError):
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
        return f"{path} is an archive; unpack it (e.g. `unzip {path.name} -d {path.stem}`) and give the folder that holds config.json"
    if path.name.startswith("model.ckpt") or ".data-0" in path.name or path.suffix == ".index":
        return f"{path} is part of a TensorFlow checkpoint; convert it first (README: 'Checkpoints you did not train')"
    return f"{path} is a file; give the checkpoint folder that holds it and config.json"


def _folder_hint(path: Path) -> str:
    """What a folder without config.json might be instead: a run, a TF checkpoint, a parent."""
    if RunFolder(path).is_run():
        return f"; this looks like a run folder, its checkpoint is {RunFolder(path).checkpoint}"
    if any(path.glob("*.index")) or any(path.glob("*.data-0*")):
        return "; it holds a TensorFlow checkpoint: convert it first (README: 'Checkpoints you did not train')"
    inner = sorted(p.parent for p in path.glob("*/config.json"))
    if inner:
        return f"; give the folder that holds config.json, e.g. {inner[0]}"
    if any(path.glob("*.zip")):
        return "; it holds an archive: unpack it and give the folder that holds config.json"
    return "; give the folder that holds config.json and model.safetensors"


def read_config(folder: Path) -> dict[str, Any]:
    return _read_json_object(folder / "config.json", "fix it or re-save the checkpoint")


def read_spec(folder: Path, card: dict[str, Any], config: Any = None) -> ModelSpec:
    """From albert_lab.json when this project wrote the folder; otherwise from
    config.json through transformers (its defaults fill what the file leaves out)."""
    if "spec" in card:
        try:
            return ModelSpec.from_dict(card["spec"])
        except AlbertLabError as err:
            raise CheckpointError(f"{folder / CARD}: the spec is not valid ({err}); fix or delete the file") from None
        except (TypeError, ValueError, OverflowError, RecursionError) as err:
            raise CheckpointError(f"{folder / CARD}: the spec is not valid ({type(err).__name__}: "
                                  f"{str(err)[:120]}); fix or delete the file") from None
    from albert_lab.models import spec_from_config

    config = config if config is not None else read_transformers_config(folder)
    try:
        return spec_from_config(config, card)
    except AlbertLabError as err:
        raise CheckpointError(f"{folder / 'config.json'}: not a model ALBERT Lab can build ({err})") from None
    except (TypeError, ValueError, AttributeError, ArithmeticError) as err:
        raise CheckpointError(f"{folder / 'config.json'}: not a model ALBERT Lab can build ({type(err).__name__}: "
                              f"{str(err)[:120]})") from None


def read_transformers_config(folder: Path) -> Any:
    """transformers' config object for a folder, or a CheckpointError naming config.json
    (a config.json of the right shape can still hold values transformers rejects)."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(folder))
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"):
            value = getattr(config, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {str(value)[:40]!r}")
    except Exception as err:  # transformers raises many types for bad values (KeyError, TypeError, ...)
        raise CheckpointError(f"{folder / 'config.json'}: transformers cannot read it ({type(err).__name__}: "
                              f"{str(err).splitlines()[0][:160] if str(err) else ''}); fix it or re-save the checkpoint") from None
    return config


def checkpoint_label(folder: Path, name: str | None = None) -> str:
    """A run's checkpoint is named after its run folder; others after their folder."""
    return name or (folder.parent.name if folder.name == "checkpoint" else folder.name)


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


def summarize_checkpoint(folder: str | Path, name: str | None = None) -> CheckpointSummary | None:
    """The summary of a local safetensors checkpoint; None where only loading can tell
    (pickled or sharded weights). Raises CheckpointError for folders that cannot load."""
    given = Path(str(folder).strip()).expanduser()
    path = check_folder(given)
    files = sorted(path.glob("*.safetensors"))
    if [f.name for f in files] != ["model.safetensors"]:
        return None
    card = read_card(path)
    spec = read_spec(path, card)
    keys = safetensors_keys(files[0])
    # What from_pretrained reports missing for a head: its prefix absent from the file
    # (files from *ForMaskedLM / base models keep the encoder under the same prefix).
    missing = {prefix for prefix in (MLM_KEYS[spec.family], PAIR_KEYS[spec.family])
               if not any(k.startswith(prefix) for k in keys)}
    return CheckpointSummary(name=checkpoint_label(given.absolute(), name), source=str(folder).strip(), spec=spec,
                             heads=head_status(spec, missing, card),
                             card=card)


# ---- discovery -------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckpointInfo:
    name: str
    path: Path
    origin: Literal["shipped", "run"]
    family: str
    objective: str
    label: str
    card: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "origin": self.origin, "family": self.family,
                "objective": self.objective, "label": self.label, "metrics": self.card.get("metrics", {})}


def discover_checkpoints(shipped: Path | None = None, runs: Path | None = None) -> list[CheckpointInfo]:
    """Shipped checkpoints (sub-folders of checkpoints/) and finished runs' checkpoints."""
    found = []
    shipped = shipped or checkpoints_dir()
    for folder in sorted(shipped.iterdir()) if shipped.is_dir() else []:
        if (folder / "config.json").is_file():
            found.append(_info(folder.name, folder, "shipped"))
    runs = runs or runs_dir()
    for run in sorted(runs.iterdir()) if runs.is_dir() else []:
        folder = RunFolder(run).checkpoint
        if run.is_dir() and not run.name.startswith("."):
            recover_interrupted_save(folder)
        if (folder / "config.json").is_file() and _run_finished(run):
            found.append(_info(f"run:{run.name}", folder, "run"))
    return [info for info in found if info is not None]


def _run_finished(run: Path) -> bool:
    try:
        return RunFolder(run).read().get("status") in ("succeeded", "cancelled")
    except (OSError, ValueError, AttributeError, RecursionError):
        return False


def _info(name: str, folder: Path, origin: Literal["shipped", "run"]) -> CheckpointInfo | None:
    try:
        card = read_card(folder)
        spec = read_spec(folder, card)
    except (AlbertLabError, OSError, ValueError):
        return None  # unreadable folders are reported when someone tries to load them
    return CheckpointInfo(name=name, path=folder, origin=origin, family=spec.family, objective=spec.objective,
                          label=spec.label, card=card)
