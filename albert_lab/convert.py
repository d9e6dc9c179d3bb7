"""albertize: turn a pretrained BERT into an ALBERT.

Two of the paper's design choices, applied to weights that already know a language:
- the factorised embedding (albert_lab/factorise.py): the V x H word-embedding matrix becomes
  a V x E table times an E x H projection by truncated SVD; exact at E = H, fitted by least
  squares at E < H, and how close that comes is recorded (`embedding_fit_r2`);
- cross-layer sharing: each shared block starts from the layers it replaces (their
  average, as in Bae et al.'s Relaxed Recursive Transformers; or one of them).

Heads that exist are carried over, heads that do not are left out (never random): the
MLM head when E = H (at E < H its H-wide transform has no counterpart, and is left
out), the pair head as what trained it: "is next" for NSP, "in order" for a BERT whose card
says SOP trained it (marked so on the card).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import torch

from albert_lab.errors import CheckpointError, SpecError
from albert_lab.factorise import factorise, factorised_embeddings
from albert_lab.models import build_model
from albert_lab.spec import Init, ModelSpec, Sharing, layer_group

INIT_NOTES: dict[str, str] = {
    "average": "each shared block is the mean of the layers it replaces",
    "stepwise": "each shared block is the first of the layers it replaces (layers at evenly spaced depths)",
    "lower": "shared block g is the source's layer g (the lowest layers)",
}
# AlbertLayer name <- BertLayer name (both post-LayerNorm blocks of the same maths)
LAYER_MAP = {
    "attention.query": "attention.self.query",
    "attention.key": "attention.self.key",
    "attention.value": "attention.self.value",
    "attention.dense": "attention.output.dense",
    "attention.LayerNorm": "attention.output.LayerNorm",
    "ffn": "intermediate.dense",
    "ffn_output": "output.dense",
    "full_layer_layer_norm": "output.LayerNorm",
}


PAIR_NOTES = {"nsp": "carried over from the source's NSP head (predicts 'is next')",
              "sop": "carried over from the source's SOP head (predicts 'in order'; BERT keeps it in the NSP slot)",
              "none": "absent in the source"}


@dataclass(frozen=True)
class Conversion:
    """What albertize made: the model (AlbertForPreTraining), its spec, and the facts
    its card records."""

    model: torch.nn.Module
    spec: ModelSpec
    omit: tuple[str, ...]  # weight-name prefixes of heads the source lacked: not saved
    facts: dict[str, Any]


def albertize_state(source: dict[str, torch.Tensor], source_spec: ModelSpec, embedding_size: int,
                    sharing: Sharing = "all", groups: int | None = None, init: Init = "average",
                    layer_norm_eps: float = 1e-12, seed: int = 0) -> Conversion:
    """Convert a BertForPreTraining state dict (`bert.*`, `cls.*`; heads optional) into
    an AlbertForPreTraining of the same width, depth and vocabulary."""
    if init not in get_args(Init):
        raise SpecError("init", f"{init!r} is not allowed; allowed: {', '.join(map(repr, get_args(Init)))}")
    if source_spec.family != "bert":
        raise CheckpointError(f"albertize converts BERT models; this one is {source_spec.family.upper()}")
    has_mlm = "cls.predictions.transform.dense.weight" in source
    has_pooler = "bert.pooler.dense.weight" in source  # BertModel / BertForMaskedLM exports often lack it
    has_nsp = "cls.seq_relationship.weight" in source and has_pooler  # the pair head reads the pooler: none without it
    carry_mlm = has_mlm and embedding_size == source_spec.hidden_size
    spec = albertized_spec(source_spec, embedding_size, sharing, groups, has_nsp)
    objective = spec.objective
    model = with_layer_norm_eps(build_model(spec, seed=seed), layer_norm_eps)  # heads the source lacks keep this seeded init
    factor = factorise(source["bert.embeddings.word_embeddings.weight"], embedding_size)
    state = factorised_embeddings(source, factor, layer_norm_eps, seed)
    fit_r2 = state.pop("_fit_r2", 1.0)
    state.update(_blocks(source, spec, init))
    kept_attention = attention_kept(source, state, spec)
    if has_pooler:
        state["albert.pooler.weight"] = source["bert.pooler.dense.weight"]
        state["albert.pooler.bias"] = source["bert.pooler.dense.bias"]
    if carry_mlm:
        for name in ("dense.weight", "dense.bias", "LayerNorm.weight", "LayerNorm.bias"):
            state[f"predictions.{name}"] = source[f"cls.predictions.transform.{name}"]
        state["predictions.bias"] = source["cls.predictions.bias"]
    if has_nsp:
        state["sop_classifier.classifier.weight"] = source["cls.seq_relationship.weight"]
        state["sop_classifier.classifier.bias"] = source["cls.seq_relationship.bias"]
    _load_into(model, state, spec)
    omit = tuple(p for p, keep in (("predictions.", carry_mlm), ("sop_classifier.", has_nsp), ("albert.pooler.", has_pooler))
                 if not keep)
    facts = {"embedding_size": embedding_size, "sharing": sharing, "groups": spec.num_groups, "init": init,
             "init_note": INIT_NOTES[init], "embedding_energy_kept": round(factor.energy_kept, 6),
             "embedding_fit_r2": fit_r2, "attention_kept": round(kept_attention, 4),
             "heads": {"mlm": "carried over" if carry_mlm else ("left out: no counterpart at E < H" if has_mlm else "absent in the source"),
                       "pair": PAIR_NOTES[objective] if has_pooler else "absent in the source (no pooler weights)"}}
    return Conversion(model=model, spec=spec, omit=omit, facts=facts)


def albertized_spec(source_spec: ModelSpec, embedding_size: int, sharing: Sharing = "all", groups: int | None = None,
                    pair_head: bool = True) -> ModelSpec:
    """The ALBERT albertize makes of a BERT of `source_spec`, known before any weight is read (the
    runs budget counts its bytes first). BERT keeps its pair head in the NSP slot whatever trained
    it; the spec says which objective did, and 'none' where the source has no pair head."""
    objective = ("sop" if source_spec.objective == "sop" else "nsp") if pair_head else "none"
    return ModelSpec(family="albert", vocab_size=source_spec.vocab_size, embedding_size=embedding_size,
                     hidden_size=source_spec.hidden_size, num_layers=source_spec.num_layers,
                     num_heads=source_spec.num_heads, ffn_size=source_spec.ffn_size, sharing=sharing,
                     num_groups=groups, dropout=0.0, max_positions=source_spec.max_positions,
                     type_vocab_size=source_spec.type_vocab_size, objective=objective,
                     activation=source_spec.activation)


def with_layer_norm_eps(model: torch.nn.Module, eps: float) -> torch.nn.Module:
    """`model` computing every LayerNorm with the source's epsilon (its config says so too)."""
    model.config.layer_norm_eps = eps
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.eps = eps
    return model


def source_state(bundle) -> dict[str, torch.Tensor]:
    """A loaded source's weights, without those transformers made up on load (heads it lacks)."""
    return {k: v for k, v in bundle.model.state_dict().items() if k not in bundle.missing_keys}


def source_eps(bundle) -> float:
    return float(getattr(bundle.model.config, "layer_norm_eps", 1e-12))


def _source_layer(source: dict[str, torch.Tensor], layer: int, albert_name: str, suffix: str) -> torch.Tensor:
    return source[f"bert.encoder.layer.{layer}.{LAYER_MAP[albert_name]}.{suffix}"].float()


def _init_from(source: dict[str, torch.Tensor], layers: list[int], group: int, init: Init, name: str, suffix: str) -> torch.Tensor:
    """One shared weight from the source layers it replaces."""
    if init == "average":
        return torch.stack([_source_layer(source, i, name, suffix) for i in layers]).mean(0)
    return _source_layer(source, layers[0] if init == "stepwise" else group, name, suffix)


def query_key_norm(query: torch.Tensor, key: torch.Tensor, heads: int) -> float:
    """sqrt(sum over heads of ||W_q,h^T W_k,h||_F^2): the size of the bilinear form whose values,
    over sqrt(d), are a layer's attention logits (biases aside). (H, H) weights, rows by head."""
    q, k = query.float().reshape(heads, -1, query.shape[1]), key.float().reshape(heads, -1, key.shape[1])
    return float(torch.linalg.matrix_norm(q.transpose(1, 2) @ k).square().sum().sqrt())


def attention_kept(source: dict[str, torch.Tensor], state: dict[str, torch.Tensor], spec: ModelSpec) -> float:
    """The smallest, over shared attention blocks, of the block's query-key form norm over the
    mean of those of the layers it replaces. A copied layer keeps 1; an average can cancel:
    all-MiniLM-L6-v2's six layers averaged keep 0.16, their logits shrink about six-fold and
    every token attends almost uniformly, a saddle the shared block is slow to leave."""
    if "attention" not in spec.sharing_rule.shares:
        return 1.0
    kept = []
    for group, layers in _members(spec).items():
        slot = group if spec.sharing_rule.whole_block else layers[0]
        block = f"albert.encoder.albert_layer_groups.{slot}.albert_layers.0.attention"
        shared = query_key_norm(state[f"{block}.query.weight"], state[f"{block}.key.weight"], spec.num_heads)
        own = [query_key_norm(_source_layer(source, i, "attention.query", "weight"),
                              _source_layer(source, i, "attention.key", "weight"), spec.num_heads) for i in layers]
        kept.append(shared / max(sum(own) / len(own), 1e-12))
    return min(kept)


ATTENTION_WARN = 0.5  # a shared block keeping less of its layers' query-key form starts attending almost uniformly


def attention_warning(facts: dict) -> str | None:
    """What the CLI and the Model card say of a conversion whose shared blocks keep under
    ATTENTION_WARN of their layers' attention (None where they keep enough)."""
    kept = facts.get("attention_kept", 1.0)
    if kept >= ATTENTION_WARN:
        return None
    return (f"The shared blocks' query-key forms keep {kept:.0%} of their layers': averaged, the layers' attention cancels, "
            "every token starts attending almost uniformly, and uptraining is slow to leave that. "
            "Init 'stepwise' copies one layer whole.")


def _members(spec: ModelSpec) -> dict[int, list[int]]:
    """Sharing group -> the source layers it replaces (from the spec's layer-to-group map)."""
    members: dict[int, list[int]] = {}
    for layer, group in enumerate(spec.group_of_layer):
        members.setdefault(group, []).append(layer)
    return members


def _blocks(source: dict[str, torch.Tensor], spec: ModelSpec, init: Init) -> dict[str, torch.Tensor]:
    """ALBERT's layer groups. 'all': one block per sharing group; 'none', 'attention',
    'ffn': one group per layer, the shared half initialised from its sharing group."""
    members, rule = _members(spec), spec.sharing_rule
    shared = {name for name in LAYER_MAP if ("attention" if name.startswith("attention") else "FFN") in rule.shares}
    state = {}
    slots = range(spec.num_groups) if rule.whole_block else range(spec.num_layers)
    for slot in slots:
        group = slot if rule.whole_block else layer_group(slot, spec.num_layers, spec.num_groups)
        for name in LAYER_MAP:
            for suffix in ("weight", "bias"):
                key = f"albert.encoder.albert_layer_groups.{slot}.albert_layers.0.{name}.{suffix}"
                if name in shared:
                    state[key] = _init_from(source, members[group], group, init, name, suffix)
                else:
                    state[key] = _source_layer(source, slot, name, suffix)
    return state


def _load_into(model: torch.nn.Module, state: dict[str, torch.Tensor], spec: ModelSpec) -> None:
    from albert_lab.models import tie_shared_modules

    own = model.state_dict()
    for key, value in state.items():
        if key not in own:
            raise CheckpointError(f"albertize made a weight the ALBERT model does not have: {key}")
        if own[key].shape != value.shape:
            raise CheckpointError(f"albertize: {key} has shape {tuple(value.shape)}, the model wants {tuple(own[key].shape)}")
    model.load_state_dict(state, strict=False)
    tie_shared_modules(model, spec)
    model.tie_weights()


# ---- from a folder or hub id to a checkpoint folder ------------------------------------------
def conversion_options(source: str | Path, embedding_size: int, sharing: str, groups: int | None, init: str,
                       seed: int = 0) -> dict[str, Any]:
    """What makes two conversions the same: the source (store.source_identity) and every
    choice. The card of each conversion records them (`conversion.options`); albertize_into
    looks for them."""
    from albert_lab.checkpoint.store import source_identity

    return {**source_identity(source), "embedding_size": int(embedding_size), "sharing": sharing,
            "groups": None if sharing == "none" else int(groups or 1), "init": init, "seed": int(seed)}


def albertize_into(root: Path, stem: str, source: str | Path, embedding_size: int, sharing: Sharing,
                   groups: int | None, init: Init, seed: int = 0, quota: int | None = None) -> tuple[Path, bool]:
    """albertize into a new folder `root/stem` (`stem-2`, ... when taken), or give the folder of an
    identical conversion already under `root`: (folder, reused). One conversion at a time per
    `root` (store.made_once), so clicks at once neither convert twice nor hold two models in memory;
    with `quota` (bytes), refused before the work when `root`'s parent would hold more."""
    import shlex

    from albert_lab.checkpoint.store import made_once, planned_bytes
    from albert_lab.paths import unique_folder

    def convert() -> Path:
        out = unique_folder(root / stem)
        args = ["--checkpoint", str(source), "--embedding", str(embedding_size), "--sharing", sharing, "--init", init,
                "--out", str(out)] + (["--groups", str(groups)] if groups else [])
        return albertize(source, out, embedding_size, sharing, groups, init, seed,
                         command="albert-lab albertize " + shlex.join(args))

    options = conversion_options(source, embedding_size, sharing, groups, init, seed)
    adding = planned_bytes(source, lambda spec: albertized_spec(spec, embedding_size, sharing, groups)) if quota else None
    return made_once(root, "conversion", options, source, convert, quota, adding)


def albertize(source: str | Path, out: str | Path, embedding_size: int = 128, sharing: Sharing = "all",
              groups: int | None = None, init: Init = "average", seed: int = 0, command: str = "") -> Path:
    """Load a BERT-family checkpoint (a transformers BERT folder, a sentence-transformers
    folder, a hub id when online), convert it, and save an ALBERT checkpoint at `out`
    whose card says 'converted, not trained' and records its options (conversion_options)."""
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.checkpoint.sources import describe_source, portable_command
    from albert_lab.checkpoint.store import check_new_folder, save_checkpoint

    started = time.time()
    out = check_new_folder(out)  # before the work, and nothing of the user's replaced
    bundle = load_checkpoint(source, device="cpu")
    if bundle.spec.family != "bert":
        raise CheckpointError(f"{source}: albertize converts BERT models; this is an {bundle.spec.family.upper()} "
                              "checkpoint (it already has ALBERT's embedding and sharing)")
    conv = albertize_state(source_state(bundle), bundle.spec, embedding_size, sharing, groups, init, source_eps(bundle), seed)
    facts, named = dict(conv.facts), describe_source(source)  # the card names the source as every machine can
    card = {
        "name": Path(out).name,
        "heads": {"mlm": "present" if "predictions." not in conv.omit else "missing",
                  "pair": "present" if "sop_classifier." not in conv.omit else "missing"},
        "metrics": {},
        "conversion": {**facts, "source": named, "source_name": bundle.name, "source_spec": bundle.spec.label,
                       "status": "converted, not trained",
                       "options": conversion_options(source, embedding_size, sharing, groups, init, seed)},
        "provenance": {"origin": f"converted from {bundle.name} by albertize, not trained", "command": portable_command(command),
                       "source": named, "seed": seed, "wall_time_s": round(time.time() - started, 1),
                       "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")},
    }
    return save_checkpoint(conv.model, bundle.tokenizer, conv.spec, out, card, omit=conv.omit, new=True)
