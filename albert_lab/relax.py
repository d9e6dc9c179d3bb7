"""relax: a real BERT made into an ALBERT whose layer applications each add back a low-rank part
of what sharing took from them (albert_lab/relaxed.py holds the model).

albertize makes the shared blocks (their average, or one of the layers they replace). For layer
l of sharing group g and each of its shared matrices, the residual R_l = W_l - W_g is what
sharing took; its truncated SVD R_l ~ U_r S_r V_r^T gives the correction B_l = U_r S_r,
A_l = V_r^T (Bae et al., ICLR 2025). The part of R_l's energy (squared Frobenius norm) a rank
keeps is sum(s_i^2, i <= r) / sum(s_i^2). Rank 0 is albertize's model; full rank is the
source again. Every residual's SVD is computed once (`Relaxation`), then each rank is a
truncation of it: a curve over ranks costs one decomposition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from albert_lab.convert import (
    LAYER_MAP,
    Conversion,
    albertize_state,
    albertized_spec,
    source_eps,
    source_state,
    with_layer_norm_eps,
)
from albert_lab.errors import AlbertLabError
from albert_lab.fields import ascii_int
from albert_lab.limits import MAX_RANKS
from albert_lab.models import build_model, layer_applications, tie_shared_modules
from albert_lab.relaxed import RELAXED_MAPS, half_of
from albert_lab.spec import HALVES, Half, Init, ModelSpec, Sharing

FULL = "full"


def parse_rank(text: str) -> int | str:
    """A rank as typed: a whole number >= 0 in ASCII digits (fields.ascii_int: '²' and '١' are no
    rank), or 'full'."""
    text = str(text).strip().lower()
    if text == FULL:
        return FULL
    rank = ascii_int(text) if text[:1] not in ("+", "-") else None  # no sign: '+4' and '-0' are typos, not ranks
    if rank is None:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise AlbertLabError(f"rank: {shown!r} is not a whole number >= 0 or 'full'")
    return rank


def parse_ranks(text: str) -> list[int | str]:
    """'0,4,16,64,full' -> [0, 4, 16, 64, 'full']; each rank once, at most MAX_RANKS (each a model
    built and measured: a link of thousands was hours of a server's thread, its check of ranks given
    twice quadratic)."""
    parts = [part for part in str(text).split(",") if part.strip()]
    if not parts:
        raise AlbertLabError("--ranks: give ranks separated by commas, such as 0,4,16,64,full")
    if len(parts) > MAX_RANKS:
        raise AlbertLabError(f"--ranks: {len(parts):,} ranks given; give at most {MAX_RANKS}, such as 0,4,16,64,full")
    ranks = [parse_rank(part) for part in parts]
    seen: set[int | str] = set()
    for rank in ranks:
        if rank in seen:
            raise AlbertLabError(f"--ranks: {rank} is given twice; give each rank once")
        seen.add(rank)
    return ranks


def relaxed_ranks(spec: ModelSpec, rank: int | str, attention: int | str | None = None,
                  ffn: int | str | None = None) -> dict[Half, int]:
    """Each shared half's rank in the ALBERT of `spec`: `rank` for both unless given per half; 'full'
    is the half's full rank. A half that is not shared has none."""
    ranks: dict[Half, int] = {}
    for half, given in zip(HALVES, (attention, ffn)):
        want = rank if given is None else given
        full = spec.full_rank(half)
        if half not in spec.sharing_rule.shares:
            if given not in (None, 0):
                raise AlbertLabError(f"--rank-{'ffn' if half == 'FFN' else 'attention'} {given}: sharing "
                                     f"{spec.sharing!r} leaves the {half} unshared, each layer its own: nothing to relax")
            ranks[half] = 0
            continue
        value = full if want == FULL else int(want)
        if value > full:
            raise AlbertLabError(f"rank {value} is above full rank for the {half} matrices ({full}); give at most {full}, "
                                 "or 'full'")
        ranks[half] = value
    return ranks


def relaxed_spec(source_spec: ModelSpec, rank: int | str, embedding_size: int | None = None, sharing: Sharing = "all",
                 groups: int | None = None) -> ModelSpec:
    """The relaxed model's spec, known before any weight is read (the runs budget counts its bytes first)."""
    base = albertized_spec(source_spec, embedding_size or source_spec.hidden_size, sharing, groups)
    ranks = relaxed_ranks(base, rank)
    return base.replace(rank_attention=ranks["attention"], rank_ffn=ranks["FFN"])


@dataclass(frozen=True)
class Residual:
    """One application's residual R = W_l - W_g of one map, decomposed: R = U diag(s) Vh (float64)."""

    u: torch.Tensor
    s: torch.Tensor
    vh: torch.Tensor

    def kept(self, rank: int) -> float:
        """The share of R's energy rank `rank` keeps (1 where R is 0: nothing to keep)."""
        energy = self.s.square()
        total = float(energy.sum())
        return 1.0 if total == 0 else float(energy[:rank].sum()) / total

    def factors(self, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(A, B) of rank `rank`: A = V_r^T (r x in), B = U_r S_r (out x r), float32."""
        return self.vh[:rank].float(), (self.u[:, :rank] * self.s[:rank]).float()


@dataclass
class Relaxation:
    """A BERT against the ALBERT albertize makes of it: the rank-0 conversion, the source's own
    layer weights, and every residual of a shared matrix, decomposed once."""

    base: Conversion  # albertize's model: rank 0
    source_layers: list[dict[str, torch.Tensor]]  # per layer: albert name.suffix -> the source's tensor
    residuals: dict[tuple[int, str], Residual]  # (layer, map) -> its residual's SVD

    @classmethod
    def of(cls, source: dict[str, torch.Tensor], source_spec: ModelSpec, embedding_size: int, sharing: Sharing = "all",
           groups: int | None = None, init: Init = "average", layer_norm_eps: float = 1e-12, seed: int = 0) -> Relaxation:
        if sharing == "none":
            raise AlbertLabError("relax relaxes shared layers; sharing 'none' shares nothing: give all, attention or ffn")
        base = albertize_state(source, source_spec, embedding_size, sharing, groups, init, layer_norm_eps, seed)
        layers = [{f"{name}.{suffix}": source[f"bert.encoder.layer.{i}.{bert}.{suffix}"].float()
                   for name, bert in LAYER_MAP.items() for suffix in ("weight", "bias")} for i in range(source_spec.num_layers)]
        applied = layer_applications(base.model)
        shared = [name for half in HALVES if half in base.spec.sharing_rule.shares for name in RELAXED_MAPS[half]]
        residuals = {}
        for index, module in enumerate(applied):
            block = module.albert_layers[0]
            for name in shared:
                residual = layers[index][f"{name}.weight"].double() - block.get_submodule(name).weight.detach().double()
                u, s, vh = torch.linalg.svd(residual, full_matrices=False)
                residuals[(index, name)] = Residual(u, s, vh)
        return cls(base, layers, residuals)

    @property
    def spec(self) -> ModelSpec:
        return self.base.spec

    def ranks(self, rank: int | str, attention: int | str | None = None, ffn: int | str | None = None) -> dict[Half, int]:
        """Each shared half's rank (relaxed_ranks) for this relaxation's ALBERT."""
        return relaxed_ranks(self.spec, rank, attention, ffn)

    def at(self, ranks: dict[Half, int], seed: int = 0) -> Conversion:
        """The relaxed model of these ranks (albertize's at rank 0), with the facts its card records."""
        spec = self.spec.replace(rank_attention=ranks["attention"], rank_ffn=ranks["FFN"])
        facts = {**self.base.facts, "rank_attention": ranks["attention"], "rank_ffn": ranks["FFN"]}
        if not spec.relaxed:
            return Conversion(self.base.model, self.spec, self.base.omit, {**facts, "energy_kept": self.energy_kept(ranks)})
        model = with_layer_norm_eps(build_model(spec, seed=seed), self.base.model.config.layer_norm_eps)
        base_state = self.base.model.state_dict()
        own = model.state_dict()
        state = {k: v for k, v in base_state.items() if k in own and ".albert_layer_groups." not in k}
        applied = layer_applications(self.base.model)
        for index in range(spec.num_layers):
            prefix = f"albert.encoder.albert_layer_groups.{index}.albert_layers.0."
            block = applied[index].albert_layers[0]
            for key in (k[len(prefix):] for k in own if k.startswith(prefix)):
                state[prefix + key] = self._layer_value(index, block, key, spec)
        model.load_state_dict(state, strict=False)  # heads the source lacks keep their seeded init, and are not saved
        tie_shared_modules(model, spec)
        model.tie_weights()
        return Conversion(model, spec, self.base.omit, {**facts, "energy_kept": self.energy_kept(ranks)})

    def _layer_value(self, index: int, block: torch.nn.Module, key: str, spec: ModelSpec) -> torch.Tensor:
        """One tensor of layer `index` of the relaxed model: a shared matrix from albertize's block,
        a correction from the residual's SVD, every vector the source layer's own."""
        name, _, leaf = key.rpartition(".")
        if leaf == "shared":
            return block.get_submodule(name).weight.detach()
        if leaf in ("lora_a", "lora_b"):
            half = half_of(name)
            a, b = self.residuals[(index, name)].factors(spec.ranks[half])
            return a if leaf == "lora_a" else b
        return self.source_layers[index][key]

    def energy_kept(self, ranks: dict[Half, int]) -> dict[str, dict[str, float]]:
        """Per application (1-based) and map, the share of its residual's energy the ranks keep."""
        kept: dict[str, dict[str, float]] = {}
        for (index, name), residual in sorted(self.residuals.items()):
            half = half_of(name)
            kept.setdefault(str(index + 1), {})[name] = round(residual.kept(ranks[half]), 6)
        return kept

    def energy_total(self, ranks: dict[Half, int]) -> float:
        """The share of all residuals' energy together the ranks keep."""
        total = kept = 0.0
        for (_, name), residual in self.residuals.items():
            half = half_of(name)
            energy = residual.s.square()
            total += float(energy.sum())
            kept += float(energy[:ranks[half]].sum())
        return 1.0 if total == 0 else kept / total


def relax(source: str | Path, out: str | Path, rank: int | str, attention: int | str | None = None,
          ffn: int | str | None = None, embedding_size: int | None = None, sharing: Sharing = "all",
          groups: int | None = None, init: Init = "average", seed: int = 0, command: str = "") -> Path:
    """Load a BERT checkpoint, relax it at these ranks, and save the model at `out` with a card that
    records the ranks, the parameters added, the energy kept and the source's SHA-256."""
    from albert_lab.checkpoint.sources import describe_source, portable_command
    from albert_lab.checkpoint.store import check_new_folder, save_checkpoint
    from albert_lab.params import count

    started = time.time()
    out = check_new_folder(out)
    bundle = load_source(source)
    relaxation = Relaxation.of(source_state(bundle), bundle.spec, embedding_size or bundle.spec.hidden_size, sharing, groups,
                               init, source_eps(bundle), seed)
    conv = relaxation.at(relaxation.ranks(rank, attention, ffn), seed)
    spec, named = conv.spec, describe_source(source)
    added = count(spec).total - count(relaxation.spec).total
    card = {
        "name": Path(out).name,
        "heads": {"mlm": "present" if "predictions." not in conv.omit else "missing",
                  "pair": "present" if "sop_classifier." not in conv.omit else "missing"},
        "metrics": {},
        "conversion": {**conv.facts, "source": named, "source_name": bundle.name, "source_spec": bundle.spec.label,
                       "status": "converted, not trained",
                       "options": relax_options(source, rank if attention is None and ffn is None else
                                                f"{rank}/{attention}/{ffn}", embedding_size, sharing, groups, init, seed)},
        "relaxation": {"rank_attention": spec.rank_attention, "rank_ffn": spec.rank_ffn, "parameters_added": added,
                       "parameters": count(spec).total, "source_parameters": count(bundle.spec).total,
                       "energy_kept": relaxation.energy_total(spec.ranks), "energy_kept_by_application": conv.facts["energy_kept"],
                       "source_sha256": weights_sha256(bundle.source)},
        "provenance": {"origin": f"relaxed from {bundle.name} by relax, not trained", "command": portable_command(command),
                       "source": named, "seed": seed, "wall_time_s": round(time.time() - started, 1),
                       "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")},
    }
    return save_checkpoint(conv.model, bundle.tokenizer, spec, out, card, omit=conv.omit, new=True)


def relax_options(source: str | Path, rank: int | str, embedding_size: int | None, sharing: str, groups: int | None,
                  init: str, seed: int = 0) -> dict[str, Any]:
    """What makes two relaxed models the same (the card's `conversion.options`; relax_into looks for them)."""
    from albert_lab.checkpoint.store import source_identity

    return {**source_identity(source), "rank": str(rank), "embedding_size": embedding_size, "sharing": sharing,
            "groups": int(groups or 1), "init": init, "seed": int(seed)}


def relax_into(root: Path, stem: str, source: str | Path, rank: int | str, embedding_size: int | None = None,
               sharing: Sharing = "all", groups: int | None = None, init: Init = "average", seed: int = 0,
               quota: int | None = None) -> tuple[Path, bool]:
    """relax into a new folder `root/stem` (`stem-2`, ... when taken), or give the folder of an identical
    relaxed model already under `root`: (folder, reused); one maker at a time per `root`, as albertize_into."""
    import shlex

    from albert_lab.checkpoint.store import made_once, planned_bytes
    from albert_lab.paths import unique_folder

    def make() -> Path:
        out = unique_folder(root / stem)
        args = ["--checkpoint", str(source), "--rank", str(rank), "--sharing", sharing, "--init", init, "--out", str(out)]
        args += (["--groups", str(groups)] if groups else []) + (["--embedding", str(embedding_size)] if embedding_size else [])
        return relax(source, out, rank, None, None, embedding_size, sharing, groups, init, seed,
                     command="albert-lab relax " + shlex.join(args))

    adding = planned_bytes(source, lambda spec: relaxed_spec(spec, rank, embedding_size, sharing, groups)) if quota else None
    return made_once(root, "conversion", relax_options(source, rank, embedding_size, sharing, groups, init, seed), source,
                     make, quota, adding)


def load_source(source: str | Path):
    """The BERT to relax, on the CPU: refused, in one line, when it is not a BERT."""
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(source, device="cpu")
    if bundle.spec.family != "bert":
        raise AlbertLabError(f"{source}: relax starts from a BERT, whose layers are each their own; this is an "
                             f"{bundle.spec.family.upper()} checkpoint ({bundle.spec.label}), already shared")
    return bundle


def weights_sha256(source: str) -> dict[str, str]:
    """Each weights file of the source folder (as loaded) and its SHA-256."""
    from albert_lab.checkpoint.loadable import make_loadable
    from albert_lab.checkpoint.sources import WEIGHTS_SUFFIXES, sha256

    folder = make_loadable(Path(source))
    return {p.name: sha256(p) for p in sorted(folder.iterdir()) if p.suffix in WEIGHTS_SUFFIXES and p.is_file()}


def card_facts(card: dict[str, Any]) -> dict[str, Any] | None:
    """A relaxed checkpoint's `relaxation` section, or None."""
    relaxation = card.get("relaxation")
    return relaxation if isinstance(relaxation, dict) else None
