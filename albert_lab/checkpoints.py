"""Checkpoints: load and save transformers-format folders (reading a folder's files
without loading it, and discovery, live in albert_lab.catalog; re-exported here).

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
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import AlbertConfig, AlbertForPreTraining, AutoConfig, BertConfig, BertForPreTraining
from transformers.utils import logging as hf_logging

from albert_lab.catalog import (
    CARD,
    PICKLE_SUFFIXES,
    HeadStatus,
    check_folder,
    checkpoint_label,
    discover_checkpoints,  # noqa: F401  (re-exported: callers import it from here)
    head_status,
    is_local_source,
    read_card,
    read_spec,
    read_transformers_config,
)
from albert_lab.devices import resolve_device, resolve_dtype
from albert_lab.errors import AlbertLabError, CheckpointError
from albert_lab.kernels import tune_for_inference
from albert_lab.models import PretrainingModel, spec_from_config, tie_shared_modules
from albert_lab.spec import ModelSpec
from albert_lab.tokenizer import load_tokenizer, save_tokenizer

hf_logging.set_verbosity_error()
hf_logging.disable_progress_bar()


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
    device: torch.device = torch.device("cpu")  # noqa: RUF009 - immutable
    dtype: torch.dtype = torch.float32
    missing_keys: frozenset[str] = frozenset()  # weights transformers initialised randomly on load


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
        folder = check_folder(path, allow_pickle)
        card = read_card(folder)
        config = read_transformers_config(folder)
        spec = read_spec(folder, card, config)
        model, missing = _load_weights(folder, config, allow_pickle)
        tokenizer = load_tokenizer(folder)
        label = checkpoint_label(path.absolute(), name)  # the folder given, not a sentence-transformers module in it
    else:
        card, (config, model, missing, tokenizer) = {}, _load_from_hub(text)
        spec = spec_from_config(config, card)
        label = name or text
    tie_shared_modules(model, spec, check_equal=True)
    tune_for_inference(model)  # same math, faster CPU kernels (see analysis/common.py)
    model.to(device=torch_device, dtype=torch_dtype).eval()
    return ModelBundle(name=label, source=text, model=model, tokenizer=tokenizer, spec=spec,
                       heads=head_status(spec, missing, card), card=card, device=torch_device, dtype=torch_dtype,
                       missing_keys=frozenset(missing))


def _load_weights(folder: Path, config: AlbertConfig | BertConfig, allow_pickle: bool) -> tuple[PretrainingModel, set[str]]:
    cls = AlbertForPreTraining if config.model_type == "albert" else BertForPreTraining
    try:
        if any(folder.glob("*.safetensors")):
            model, info = cls.from_pretrained(str(folder), output_loading_info=True, use_safetensors=True)
        else:  # allowed pickles only, and never with code execution
            weights = next(p for p in sorted(folder.iterdir()) if p.suffix in PICKLE_SUFFIXES)
            state = torch.load(weights, weights_only=True, map_location="cpu")
            model, info = cls.from_pretrained(None, config=config, state_dict=state, output_loading_info=True)
    except Exception as err:  # pickles and broken files fail in many types (UnpicklingError, EOFError, SafetensorError, ...)
        first = str(err).splitlines()[0][:200] if str(err) else ""
        raise CheckpointError(f"{folder}: the weights cannot be loaded ({type(err).__name__}: {first}); "
                              "re-copy or re-train the checkpoint") from None
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


# ---- saving ----------------------------------------------------------------------------
def save_checkpoint(model: PretrainingModel, tokenizer: Any, spec: ModelSpec, out_dir: str | Path,
                    card: dict[str, Any] | None = None, tokenizer_source: str | Path | None = None,
                    extra: Callable[[Path], None] | None = None, omit: tuple[str, ...] = ()) -> Path:
    """Write a checkpoint folder atomically: into a hidden sibling, then renamed into
    place, so a reader never sees a half-written checkpoint (even after kill -9).
    `extra(folder)` may add files (e.g. trainer state) before the swap. Weights whose
    names start with an `omit` prefix are left out (a head that was missing on load)."""
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
             if k not in tied and not k.startswith(omit)}
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
    if not out.exists() and olds:  # readers do this too (catalog.recover_interrupted_save), if the saver is gone
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
