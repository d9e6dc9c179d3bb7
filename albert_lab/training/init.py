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

from albert_lab.checkpoint.files import read_card, read_spec, safetensors_keys
from albert_lab.checkpoint.heads import MLM_KEYS, PAIR_KEYS
from albert_lab.checkpoint.loadable import make_loadable
from albert_lab.errors import RunError
from albert_lab.paths import user_path
from albert_lab.spec import ModelSpec


def uptrain_spec(source: Path, objective: str | None = None, dropout: float | None = None) -> tuple[Path, ModelSpec]:
    """The folder and spec of a run that starts from a checkpoint: its architecture, with the
    run's objective (default: the pair objective its card records, else SOP) and dropout
    (default: the checkpoint's)."""
    folder = make_loadable(user_path(source, "--init-from"))
    card = read_card(folder)
    spec = read_spec(folder, card)
    objective = objective or (spec.objective if card and spec.objective != "none" else "sop")
    return folder, spec.replace(objective=objective, dropout=spec.dropout if dropout is None else dropout)


def load_init_weights(model: torch.nn.Module, folder: Path) -> dict[str, Any]:
    """Copy a checkpoint's weights into `model` (same architecture); returns what the
    run's card records about its start: the folder, its name and origin, the heads added."""
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.checkpoint.sources import describe_source

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
    return {"folder": describe_source(folder), "name": bundle.name, "spec": bundle.spec.label,
            "origin": card.get("provenance", {}).get("origin") or card.get("name") or "no albert_lab.json",
            "conversion": card.get("conversion"), "weights_files": sorted(files),
            "weights_count": sum(len(safetensors_keys(folder / f)) for f in files), "heads_added": added}


@torch.no_grad()
def standardize_pooler(model: torch.nn.Module, batches: list, gain: float = 0.5) -> dict[str, float]:
    """Set the pooler to tanh(gain * (h_cls - mean) / std), per dimension, with mean and std of
    the final [CLS] state over `batches` (the run's own first batches).

    Why: an albertized encoder's [CLS] state hardly varies between inputs (all-MiniLM-L6-v2
    with its six layers averaged into one: std 0.03 per dimension, on a norm of 10), and the
    pooler it inherits passes on a hundredth of that. The pair loss's gradient reaches the
    encoder through the pooler's weights, so it arrives a hundred times too weak, and a
    sentence-order head never left chance (docs/results.md). Standardised, the pooled vector
    varies at the scale a trained pooler gives (std about 0.4) and the order signal flows.
    Returns what the card records."""
    from albert_lab.models import Parts, pooler_linear

    encoder, training = Parts.of(model).encoder, model.training
    model.eval()  # without dropout: the statistics of the state the pooler will see
    cls = torch.cat([encoder(input_ids=b.input_ids, attention_mask=b.attention_mask, token_type_ids=b.token_type_ids)
                     .last_hidden_state[:, 0].float() for b in batches])  # (N, H)
    model.train(training)
    mean, std = cls.mean(0), cls.std(0).clamp_min(1e-6)
    dense = pooler_linear(model)
    dense.weight.copy_(torch.diag(gain / std).to(dense.weight.dtype))
    dense.bias.copy_((-gain * mean / std).to(dense.bias.dtype))
    return {"pairs": int(cls.shape[0]), "gain": gain, "cls_std_mean": round(float(std.mean()), 6),
            "cls_norm_mean": round(float(cls.norm(dim=-1).mean()), 4)}
