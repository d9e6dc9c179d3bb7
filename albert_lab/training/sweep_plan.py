"""What an uptraining sweep trains (training/sweep.py runs it): its members, each rank's relaxed model,
BERTs of fewer of the source's layers where asked and the source itself; their shared settings; the
plan checked before a run folder exists, and what it costs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from albert_lab.errors import AlbertLabError, RunError
from albert_lab.training.config import TrainConfig

BEFORE, AFTER, MEMBERS, INIT = "before.json", "after.json", "members", "init"
SWEEP = "sweep"  # run.json's key holding the plan
NEVER = 10**9  # steps between evaluations and gradient-flow records: the sweep measures its models at the end
Kind = Literal["relaxed", "shallow", "source"]


@dataclass(frozen=True)
class Member:
    """One model of the sweep: its folder under members/, its row's name on the curve, how it starts."""

    slug: str
    name: str
    kind: Kind
    value: str  # the rank ('0', '4', 'full'), the layers kept ('3'), '' for the source

    @property
    def rank(self) -> str:
        """The curve's `rank` column: the rank, 'L=3' for a shallow BERT, 'source'."""
        return {"source": "source", "shallow": f"L={self.value}"}.get(self.kind, self.value)

    @property
    def end(self) -> str:
        """The curve's `end` column (analysis/relaxation.curve_end; 'fewer layers' for a shallow BERT)."""
        from albert_lab.analysis.relaxation import SOURCE, curve_end
        from albert_lab.relax import parse_rank

        return {"source": SOURCE, "shallow": "fewer layers"}.get(self.kind) or curve_end(parse_rank(self.value))


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep trains and how it measures (run.json's `sweep`)."""

    source: str  # the BERT's folder
    ranks: tuple[str, ...]  # each relaxed model's rank, as relax.parse_rank reads it
    pairs: int  # held-out pairs per task each model is measured on (analysis/relaxation.DEFAULT_PAIRS: the curve's)
    layers: tuple[int, ...] = ()  # BERTs of these many of the source's layers, trained beside them
    sharing: str = "all"
    init: str = "average"
    embedding_size: int | None = None
    groups: int | None = None

    def members(self) -> list[Member]:
        from albert_lab.analysis.relaxation import SOURCE, curve_name
        from albert_lab.relax import parse_rank

        return ([Member(f"rank-{r}", curve_name(parse_rank(r)), "relaxed", r) for r in self.ranks]
                + [Member(f"layers-{k}", f"BERT L={k}", "shallow", str(k)) for k in self.layers]
                + [Member("source", SOURCE, "source", "")])

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "ranks": list(self.ranks), "layers": list(self.layers)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepPlan:
        try:
            return cls(**{**data, "ranks": tuple(str(r) for r in data["ranks"]),
                          "layers": tuple(int(k) for k in data.get("layers", ()))})
        except (TypeError, KeyError, ValueError) as err:
            raise RunError(f"run.json's sweep plan cannot be read ({err}); it was edited or damaged") from None


def sweep_config(source: str | Path, steps: int, **options: Any) -> TrainConfig:
    """The source's own uptraining, whose settings every member shares: `steps` steps from its weights,
    its pair task, no dropout (ALBERT's choice), a tenth of the steps to warm up (unless `options` say),
    evaluated only at the end by the sweep."""
    from albert_lab.training.init import uptrain_spec
    from albert_lab.training.recipe import train_command

    folder, spec = uptrain_spec(Path(source), None, dropout=0.0)
    config = TrainConfig(**{"spec": spec.to_dict(), "objective": spec.objective, "init_from": str(folder), "max_steps": steps,
                            "max_seq_len": min(128, spec.max_positions), "warmup_steps": max(1, steps // 10),
                            "eval_every": NEVER, "gradflow_every": NEVER, "checkpoint_every": max(1, min(100, steps // 3)),
                            **options})
    return dataclasses.replace(config, command=train_command(["--init-from", folder, "--dropout", 0], config))


def check_plan(plan: SweepPlan, config: TrainConfig | None = None) -> None:
    """AlbertLabError, before a folder is made, for a plan that cannot run: a source that is not a BERT,
    a rank above full rank, as many layers as the source has, a budget in minutes (members would see
    different tokens)."""
    from albert_lab.checkpoint.files import read_card, read_spec
    from albert_lab.relax import FULL, parse_rank
    from albert_lab.shallow import kept_layers
    from albert_lab.spec import HALVES, SHARING

    if config is not None and config.max_minutes is not None:
        raise RunError("--minutes: a sweep trains every model for the same steps, so that each sees the same tokens; "
                       "give --uptrain STEPS alone")
    spec = read_spec(Path(plan.source), read_card(Path(plan.source)))
    if spec.family != "bert":
        raise AlbertLabError(f"{plan.source}: relax starts from a BERT, whose layers are each their own; this is an "
                             f"{spec.family.upper()} checkpoint ({spec.label}), already shared")
    for rank in map(parse_rank, plan.ranks):
        for half in (h for h in HALVES if h in SHARING[plan.sharing].shares and rank != FULL and rank > spec.full_rank(h)):
            raise AlbertLabError(f"rank {rank} is above full rank for the {half} matrices ({spec.full_rank(half)}); "
                                 f"give at most {spec.full_rank(half)}, or 'full'")
    for keep in plan.layers:
        kept_layers(spec.num_layers, keep)


# What a sweep costs: each member trains 3x its forward FLOPs per token on `steps` batches (a shallow
# BERT its share of the layers; the corrections add a few per cent, left out), and each model is read
# twice (before, after) on `pairs` pairs per measurement (MLM, the pair task, the source's MLM for the KL).
# The rate is what the bert-nsp sweep of docs/results.md trained at on 2 busy cores.
SWEEP_FLOPS_PER_S = 4e10


def sweep_seconds(plan: SweepPlan, config: TrainConfig) -> float:
    """About how long the sweep takes here: training and measuring every member, at SWEEP_FLOPS_PER_S."""
    from albert_lab.params import count

    spec = config.model_spec()
    per_token = count(spec, config.max_seq_len).flops_per_token
    layers = [int(m.value) / spec.num_layers if m.kind == "shallow" else 1.0 for m in plan.members()]
    trained = 3 * per_token * sum(layers) * (config.max_steps or 0) * config.batch_size * config.max_seq_len
    measured = 2 * 3 * per_token * sum(layers) * plan.pairs * config.max_seq_len
    return (trained + measured) / SWEEP_FLOPS_PER_S


def parse_layers(text: str | None) -> tuple[int, ...]:
    """'1,3' -> (1, 3): the layers of each shallow BERT a sweep trains beside the relaxed models."""
    if not text or not text.strip():
        return ()
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.isdigit() for part in parts):
        raise AlbertLabError(f"--layers: {text!r} is not whole numbers separated by commas, such as 1,3")
    return tuple(dict.fromkeys(int(part) for part in parts))


def member_dir(run_dir: Path, member: Member) -> Path:
    return run_dir / MEMBERS / member.slug


def start_folder(run_dir: Path, plan: SweepPlan, member: Member) -> Path:
    """The checkpoint a member starts from: the source itself, or its own init/."""
    return Path(plan.source) if member.kind == "source" else member_dir(run_dir, member) / INIT


