"""Resumable trainer state without pickles: optimizer moments and the torch RNG go
to `trainer_state.safetensors`, scalars to `trainer_state.json`. Both live inside the
checkpoint folder, which is written atomically with the weights; `resume_checkpoint` reads
the folder back into a run's model and optimizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from albert_lab.errors import RunError

TENSORS, SCALARS = "trainer_state.safetensors", "trainer_state.json"


def save_trainer_state(folder: Path, optimizer: torch.optim.Optimizer, scalars: dict[str, Any]) -> None:
    state = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {"rng.torch": torch.get_rng_state()}
    for index, entry in state["state"].items():
        for key, value in entry.items():
            tensors[f"opt.{index}.{key}"] = value.detach().cpu().contiguous()
    save_file(tensors, str(folder / TENSORS))
    (folder / SCALARS).write_text(json.dumps({**scalars, "param_groups": state["param_groups"]}, indent=1))


def load_trainer_state(folder: Path, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Restore the optimizer and torch RNG; return the scalars (step, elapsed, ...)."""
    tensors = load_file(str(folder / TENSORS))
    scalars = json.loads((folder / SCALARS).read_text())
    per_param: dict[int, dict[str, torch.Tensor]] = {}
    for name, value in tensors.items():
        if name.startswith("opt."):
            _, index, key = name.split(".", 2)
            per_param.setdefault(int(index), {})[key] = value
    groups = scalars.pop("param_groups")
    optimizer.load_state_dict({"state": per_param, "param_groups": groups})
    torch.set_rng_state(tensors["rng.torch"])
    return scalars


def has_trainer_state(folder: Path) -> bool:
    return (folder / TENSORS).is_file() and (folder / SCALARS).is_file()


def resume_checkpoint(checkpoint: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                      device: torch.device) -> tuple[int, int, float]:
    """A run's checkpoint loaded into its model and optimizer: (step, tokens, elapsed seconds). One that
    does not match the run's model, or cannot be read, is a RunError in one line."""
    try:
        state = load_file(str(checkpoint / "model.safetensors"), device=str(device))
        missing, unexpected = model.load_state_dict(state, strict=False)
        model.tie_weights()
        # A weight saved once for all who share it (the MLM decoder's embeddings, a relaxed model's shared
        # matrices: checkpoint.store) is missing under its other names, which hold the very same tensor.
        own = model.state_dict()
        loaded = {own[k].data_ptr() for k in state if k in own}
        untied = [k for k in missing if "decoder" not in k and own[k].data_ptr() not in loaded]
        if untied or unexpected:
            raise RunError(f"{checkpoint} does not match this run's model (missing {untied[:3]}, unexpected {unexpected[:3]})")
        scalars = load_trainer_state(checkpoint, optimizer)
        step, tokens, elapsed = int(scalars["step"]), int(scalars["tokens"]), float(scalars["elapsed"])
    except RunError:
        raise
    except Exception as err:  # a shape mismatch (RuntimeError), a truncated file (SafetensorError), an edited state
        first = (str(err).strip().splitlines() or [""])[0][:200]
        if "size mismatch" in str(err):
            first = "its weights have other shapes than this run's model: " + next(
                (line.strip() for line in str(err).splitlines() if "size mismatch" in line), "")[:200]
        raise RunError(f"{checkpoint} cannot be resumed ({type(err).__name__}: {first}); if it was damaged or "
                       "replaced, start a new run") from None
    return step, tokens, elapsed
