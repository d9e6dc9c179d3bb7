"""A BERT of fewer layers made of a deeper one's: the baseline a relaxed model is held against
("a BERT of its own size"). The kept layers are evenly spaced, as the stepwise init spaces the
layers it copies (Bae et al., ICLR 2025): of L = 6, k = 3 keeps layers 1, 3 and 5 (0-based 0, 2,
4), as DistilBERT kept every other layer of its teacher. The embeddings, the heads and each kept
layer are copied whole; nothing is trained.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from albert_lab.checkpoint.heads import MLM_KEYS, PAIR_KEYS
from albert_lab.errors import AlbertLabError
from albert_lab.models import build_model
from albert_lab.spec import ModelSpec

LAYER = re.compile(r"^bert\.encoder\.layer\.(\d+)\.")


def kept_layers(num_layers: int, keep: int) -> list[int]:
    """The source layers (0-based) a BERT of `keep` layers keeps: evenly spaced, the first one first."""
    if not 1 <= keep < num_layers:
        raise AlbertLabError(f"--layers: {keep} is not between 1 and {num_layers - 1}, fewer than the source's "
                             f"{num_layers} layers")
    return [i * num_layers // keep for i in range(keep)]


def shallow_spec(spec: ModelSpec, keep: int) -> ModelSpec:
    return spec.replace(num_layers=keep, num_groups=keep)


def shallow_state(source: dict, layers: list[int]) -> dict:
    """The source's weights with only `layers`, renumbered 0, 1, ... in order."""
    place = {old: new for new, old in enumerate(layers)}
    state = {}
    for name, value in source.items():
        found = LAYER.match(name)
        if found is None:
            state[name] = value
        elif int(found.group(1)) in place:
            state[f"bert.encoder.layer.{place[int(found.group(1))]}.{name[found.end():]}"] = value
    return state


def shallow(source: str | Path, out: str | Path, keep: int, seed: int = 0, command: str = "") -> Path:
    """Save at `out` the BERT of `keep` evenly spaced layers of the BERT at `source`, with a card that
    names the layers kept and the source."""
    from albert_lab.checkpoint.sources import describe_source, portable_command
    from albert_lab.checkpoint.store import check_new_folder, save_checkpoint
    from albert_lab.convert import source_state, with_layer_norm_eps
    from albert_lab.relax import load_source

    started = time.time()
    out = check_new_folder(out)
    bundle = load_source(source)
    layers = kept_layers(bundle.spec.num_layers, keep)
    spec = shallow_spec(bundle.spec, keep)
    model = with_layer_norm_eps(build_model(spec, seed=seed), bundle.model.config.layer_norm_eps)
    own = model.state_dict()
    state = {k: v for k, v in shallow_state(source_state(bundle), layers).items() if k in own}
    model.load_state_dict(state, strict=False)  # heads the source lacks keep their seeded init
    model.tie_weights()
    heads = {"mlm": MLM_KEYS["bert"], "pair": PAIR_KEYS["bert"]}
    present = {head: any(k.startswith(prefix) for k in state) for head, prefix in heads.items()}
    omit = tuple(prefix for head, prefix in heads.items() if not present[head])  # not saved: as on load, missing
    named = describe_source(source)
    card = {"name": Path(out).name, "heads": {head: "present" if ok else "missing" for head, ok in present.items()},
            "metrics": {},
            "conversion": {"source": named, "source_name": bundle.name, "source_spec": bundle.spec.label,
                           "layers_kept": [i + 1 for i in layers], "status": "fewer layers, not trained"},
            "provenance": {"origin": f"layers {', '.join(str(i + 1) for i in layers)} of {bundle.name}, not trained",
                           "command": portable_command(command), "source": named, "seed": seed,
                           "wall_time_s": round(time.time() - started, 1), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}}
    return save_checkpoint(model, bundle.tokenizer, spec, out, card, omit=omit, new=True)
