"""Checkpoints: load, save and discover transformers-format folders.

A checkpoint is a folder `from_pretrained` can read: config.json, model.safetensors,
the tokenizer (spiece.model + tokenizer files) and, when this project wrote it,
albert_lab.json: the spec (incl. sharing strategy), the objective the pair head was
trained with, provenance and metrics. Every model loads into its pretraining class so
that missing heads show up as missing keys instead of passing silently: hub ALBERT
checkpoints ship without SOP head weights, and their SOP scores are noise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from collections.abc import Callable

import torch
from transformers import AlbertConfig, AlbertForPreTraining, AutoConfig, BertConfig, BertForPreTraining
from transformers.utils import logging as hf_logging

from albert_lab.analysis.common import tune_for_inference
from albert_lab.devices import resolve_device, resolve_dtype
from albert_lab.errors import AlbertLabError, CheckpointError
from albert_lab.models import PretrainingModel, spec_from_config, tie_shared_modules
from albert_lab.paths import checkpoints_dir, runs_dir
from albert_lab.spec import ModelSpec
from albert_lab.tokenizer import load_tokenizer, save_tokenizer

hf_logging.set_verbosity_error()
hf_logging.disable_progress_bar()

CARD = "albert_lab.json"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
PAIR_KEYS = {"albert": "sop_classifier.", "bert": "cls.seq_relationship."}
MLM_KEYS = {"albert": "predictions.", "bert": "cls.predictions."}
HeadState = Literal["trained", "untrained", "missing", "present"]


@dataclass(frozen=True)
class HeadStatus:
    """What a checkpoint's heads can be trusted with.

    trained:   weights present and trained by this project (per albert_lab.json);
    untrained: weights present but never trained (objective 'none');
    missing:   not in the checkpoint: transformers initialised them randomly;
    present:   weights present, provenance unknown (e.g. a hub checkpoint).
    """

    mlm: HeadState
    pair: HeadState
    pair_kind: Literal["sop", "nsp"]  # what the pair head predicts; label 0 = original order / is next

    @property
    def pair_usable(self) -> bool:
        return self.pair in ("trained", "present")

    @property
    def warning(self) -> str | None:
        kind = self.pair_kind.upper()
        if self.pair == "missing":
            return (f"The {kind} head weights are missing from this checkpoint: transformers initialised them "
                    f"randomly, so its {kind} scores are noise (public ALBERT checkpoints ship without them).")
        if self.pair == "untrained":
            return f"This model was trained without an inter-sentence loss: its pair head was never trained."
        if self.mlm == "missing":
            return "The MLM head weights are missing: masked-token predictions are noise."
        return None


@dataclass
class ModelBundle:
    """A loaded checkpoint: model (eval mode, on `device`), tokenizer, spec and card."""

    name: str
    source: str
    model: PretrainingModel
    tokenizer: Any
    spec: ModelSpec
    heads: HeadStatus
    card: dict[str, Any] = field(default_factory=dict)
    device: torch.device = torch.device("cpu")
    dtype: torch.dtype = torch.float32


# ---- loading --------------------------------------------------------------------------
def load_checkpoint(source: str | Path, device: str = "auto", dtype: str = "float32",
                    allow_pickle: bool = False, name: str | None = None) -> ModelBundle:
    """Load a checkpoint folder (or a hub id, when online) into its pretraining class."""
    text = str(source).strip()
    if not text:
        raise CheckpointError("no checkpoint given: pick one from the list, or give a folder or hub id")
    path = Path(text).expanduser()
    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    if is_local_source(text):
        folder = _check_folder(path, allow_pickle)
        card = read_card(folder)
        config = AutoConfig.from_pretrained(str(folder))
        model, missing = _load_weights(folder, config, allow_pickle)
        tokenizer = load_tokenizer(folder)
        label = name or (folder.parent.name if folder.name == "checkpoint" else folder.name)
    else:
        card, (config, model, missing, tokenizer) = {}, _load_from_hub(text)
        label = name or text
    spec = spec_from_config(config, card)
    tie_shared_modules(model, spec, check_equal=True)
    tune_for_inference(model)  # same math, faster CPU kernels (see analysis/common.py)
    model.to(device=torch_device, dtype=torch_dtype).eval()
    return ModelBundle(name=label, source=text, model=model, tokenizer=tokenizer, spec=spec,
                       heads=head_status(spec, missing, card), card=card, device=torch_device, dtype=torch_dtype)


def is_local_source(text: str) -> bool:
    """A hub id is `name` or `org/name`; anything else, an existing path, or a path whose
    first part exists here (`checkpoints/typo`) is a local folder."""
    return (Path(text).expanduser().exists() or text.startswith((".", "/", "~")) or not HUB_ID.match(text)
            or Path(text.split("/")[0]).is_dir())


def _check_folder(path: Path, allow_pickle: bool) -> Path:
    if not path.exists():
        raise CheckpointError(f"{path}: no such folder")
    if path.is_file():
        raise CheckpointError(f"{path} is a file; give the checkpoint folder that holds config.json")
    if not (path / "config.json").is_file():
        hint = f"; this looks like a run folder, its checkpoint is {path / 'checkpoint'}" if (path / "run.json").is_file() else ""
        raise CheckpointError(f"{path} has no config.json, so it is not a transformers checkpoint folder{hint}")
    try:
        model_type = json.loads((path / "config.json").read_text()).get("model_type")
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{path / 'config.json'} is not valid JSON ({err})") from None
    if model_type not in ("albert", "bert"):
        raise CheckpointError(f"unsupported model type {model_type!r} in {path / 'config.json'}; "
                              "ALBERT Lab loads 'albert' and 'bert' checkpoints")
    safetensors = sorted(path.glob("*.safetensors"))
    if safetensors:
        for file in safetensors:
            _check_safetensors(file)
        return path
    pickles = sorted(p.name for p in path.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if not pickles:
        raise CheckpointError(f"{path} has a config.json but no weights (model.safetensors)")
    if not allow_pickle:
        raise CheckpointError(f"{path} holds only pickled weights ({', '.join(pickles)}), and a pickle can run code "
                              "when loaded; convert it to safetensors, or allow pickles (--allow-pickle) if you trust it")
    return path


def _check_safetensors(file: Path) -> None:
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(file), "pt") as handle:
            handle.keys()
    except (SafetensorError, OSError) as err:
        raise CheckpointError(f"{file} is damaged or truncated ({err}); re-copy or re-train the checkpoint") from None


def _load_weights(folder: Path, config: AlbertConfig | BertConfig, allow_pickle: bool) -> tuple[PretrainingModel, set[str]]:
    cls = AlbertForPreTraining if config.model_type == "albert" else BertForPreTraining
    try:
        if any(folder.glob("*.safetensors")):
            model, info = cls.from_pretrained(str(folder), output_loading_info=True, use_safetensors=True)
        else:  # allowed pickles only, and never with code execution
            weights = next(p for p in sorted(folder.iterdir()) if p.suffix in PICKLE_SUFFIXES)
            state = torch.load(weights, weights_only=True, map_location="cpu")
            model, info = cls.from_pretrained(None, config=config, state_dict=state, output_loading_info=True)
    except (OSError, RuntimeError, ValueError, KeyError) as err:
        raise CheckpointError(f"{folder}: transformers could not load the weights ({str(err).splitlines()[0]})") from None
    return model, set(info["missing_keys"])


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the model hub can be reached (checked once per process, quickly)."""
    global _HUB_REACHABLE
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    if _HUB_REACHABLE is None:
        import socket

        try:
            socket.create_connection(("huggingface.co", 443), timeout=timeout).close()
            _HUB_REACHABLE = True
        except OSError:
            _HUB_REACHABLE = False
    return _HUB_REACHABLE


_HUB_REACHABLE: bool | None = None


def _load_from_hub(hub_id: str) -> tuple[Any, PretrainingModel, set[str], Any]:
    from transformers import AutoTokenizer

    if not hub_reachable():
        raise CheckpointError(f"{hub_id!r} is not a local folder, and the model hub is unreachable from this machine "
                              "(offline); give the path of a checkpoint folder, or pick a shipped checkpoint")
    try:
        config = AutoConfig.from_pretrained(hub_id)
        if config.model_type not in ("albert", "bert"):
            raise CheckpointError(f"unsupported model type {config.model_type!r} for {hub_id}; ALBERT Lab loads albert and bert")
        cls = AlbertForPreTraining if config.model_type == "albert" else BertForPreTraining
        model, info = cls.from_pretrained(hub_id, output_loading_info=True, use_safetensors=True)
        tokenizer = AutoTokenizer.from_pretrained(hub_id)
    except AlbertLabError:
        raise
    except Exception as err:  # hub errors come in many types: offline, unknown id, gated, no safetensors
        raise CheckpointError(f"could not load {hub_id!r} from the model hub ({type(err).__name__}: "
                              f"{str(err).splitlines()[0][:160]}); the hub is unreachable offline: give a local folder") from None
    return config, model, set(info["missing_keys"]), tokenizer


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
                      pair=state(PAIR_KEYS[spec.family], "pair", objective != "none"), pair_kind=kind)


def read_card(folder: Path) -> dict[str, Any]:
    file = folder / CARD
    if not file.is_file():
        return {}
    try:
        return json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{file} is not valid JSON ({err}); fix or delete it") from None


# ---- saving ----------------------------------------------------------------------------
def save_checkpoint(model: PretrainingModel, tokenizer: Any, spec: ModelSpec, out_dir: str | Path,
                    card: dict[str, Any] | None = None, tokenizer_source: str | Path | None = None,
                    extra: Callable[[Path], None] | None = None) -> Path:
    """Write a checkpoint folder atomically: into a hidden sibling, then renamed into
    place, so a reader never sees a half-written checkpoint (even after kill -9).
    `extra(folder)` may add files (e.g. trainer state) before the swap."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp, old = out.parent / f".{out.name}.tmp-{os.getpid()}", out.parent / f".{out.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    # Tied copies of partially shared modules are written in full, so plain transformers
    # loads an equivalent model. The MLM decoder's tie to the word embeddings is
    # transformers' own: its keys are left out (as save_pretrained does) and re-tied on load.
    tied = set(getattr(model, "_tied_weights_keys", None) or ())
    state = {k: v.detach().to("cpu", torch.float32).clone().contiguous() for k, v in model.state_dict().items()
             if k not in tied}
    model.save_pretrained(str(tmp), state_dict=state)
    save_tokenizer(tokenizer, tmp, tokenizer_source or getattr(tokenizer, "name_or_path", None))
    full_card = {"format": 1, **(card or {}), "spec": spec.to_dict(), "objective": spec.objective}
    (tmp / CARD).write_text(json.dumps(full_card, indent=2, default=str))
    if extra is not None:
        extra(tmp)
    _fsync_tree(tmp)
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
    return out


def recover_checkpoint_dir(out: Path) -> None:
    """Clean up after a save that was killed: if it died between its two renames, bring
    the old copy back; then remove half-written (.tmp-*) and superseded (.old-*) copies."""
    olds = sorted(out.parent.glob(f".{out.name}.old-*"), key=lambda p: p.stat().st_mtime)
    if not out.exists() and olds:
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


# ---- discovery -------------------------------------------------------------------------
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
        folder = run / "checkpoint"
        if (folder / "config.json").is_file() and _run_finished(run):
            found.append(_info(f"run:{run.name}", folder, "run"))
    return [info for info in found if info is not None]


def _run_finished(run: Path) -> bool:
    try:
        return json.loads((run / "run.json").read_text()).get("status") in ("succeeded", "cancelled")
    except (OSError, json.JSONDecodeError):
        return False


def _info(name: str, folder: Path, origin: Literal["shipped", "run"]) -> CheckpointInfo | None:
    try:
        card = read_card(folder)
        spec = spec_from_config(AutoConfig.from_pretrained(str(folder)), card)
    except (AlbertLabError, OSError, ValueError):
        return None  # unreadable folders are reported when someone tries to load them
    return CheckpointInfo(name=name, path=folder, origin=origin, family=spec.family, objective=spec.objective,
                          label=spec.label, card=card)
