"""Uptraining: a run that starts from a checkpoint's weights instead of random ones.

The model is built as for any run (seeded), then every weight the checkpoint has is
copied in. Heads the checkpoint lacks (an MLM head, a pair head) keep their seeded
initialisation: they are the only new weights, and the run trains them. An encoder
weight the checkpoint lacks is an error: that would be a randomly initialised model
under a pretrained name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from albert_lab.checkpoint.discover import check_folder
from albert_lab.checkpoint.files import read_card, read_spec, safetensors_keys
from albert_lab.checkpoint.heads import MLM_KEYS, PAIR_KEYS
from albert_lab.errors import RunError
from albert_lab.spec import ModelSpec


def uptrain_spec(source: Path, objective: str | None = None, dropout: float | None = None) -> tuple[Path, ModelSpec]:
    """The folder and spec of a run that starts from a checkpoint: its architecture, with the
    run's objective (default: the pair objective its card records, else SOP) and dropout
    (default: the checkpoint's)."""
    folder = check_folder(Path(source).expanduser())
    card = read_card(folder)
    spec = read_spec(folder, card)
    objective = objective or (spec.objective if card and spec.objective != "none" else "sop")
    return folder, spec.replace(objective=objective, dropout=spec.dropout if dropout is None else dropout)


def load_init_weights(model: torch.nn.Module, folder: Path) -> dict[str, Any]:
    """Copy a checkpoint's weights into `model` (same architecture); returns what the
    run's card records about its start: the folder, its name and origin, the heads added."""
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(folder, device="cpu")
    source = {k: v for k, v in bundle.model.state_dict().items() if k not in bundle.missing_keys}
    family = bundle.spec.family
    own = model.state_dict()
    heads = (MLM_KEYS[family], PAIR_KEYS[family], f"{family}.pooler")
    tied = set(getattr(model, "_tied_weights_keys", None) or ())
    absent = [k for k in own if k not in source and k not in tied and not k.startswith(heads)]
    if absent:
        raise RunError(f"init_from: {folder} lacks encoder weights the model needs ({', '.join(absent[:3])}"
                       f"{', ...' if len(absent) > 3 else ''}); it is not a checkpoint of this architecture")
    model.load_state_dict({k: v for k, v in source.items() if k in own}, strict=False)
    model.tie_weights()
    added = sorted({prefix.rstrip(".") for prefix in heads for k in own
                    if k.startswith(prefix) and k not in source and k not in tied})
    card = read_card(folder)
    files = {p.name for p in folder.glob("*.safetensors")}
    return {"folder": str(folder), "name": bundle.name, "spec": bundle.spec.label,
            "origin": card.get("provenance", {}).get("origin") or card.get("name") or "no albert_lab.json",
            "conversion": card.get("conversion"), "weights_files": sorted(files),
            "weights_count": sum(len(safetensors_keys(folder / f)) for f in files), "heads_added": added}
