"""The recipe of a run started from the Training page (`browser_config` from random weights,
`uptrain_config` from a checkpoint, at SCRATCH_LR and UPTRAIN_LR, its snapshots spread over the
run), and the `albert-lab train` command that makes a run again."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

from albert_lab.spec import ModelSpec, Objective
from albert_lab.training.config import OPTIONS_OF_CONFIG, SCRATCH_LR, UPTRAIN_LR, TrainConfig
from albert_lab.training.options import SPEC_OPTIONS


def snapshots(steps: int) -> dict[str, int]:
    """The snapshots of a run from the Training page, spread over its `steps`: five evaluations,
    five checkpoints and ten gradient-flow records (at least 10 steps apart)."""
    every = max(10, steps // 5)
    return dict(eval_every=every, checkpoint_every=every, gradflow_every=max(10, steps // 10))


def browser_config(preset: str, objective: Objective, *, hidden: int, layers: int, embedding: int, heads: int,
                   sharing: str, corpus: str, steps: int, minutes: float | None = None, vocab: int = 8000, **options: Any) -> TrainConfig:
    """The TrainConfig for the Training page's form: the preset with the fields the form
    shows changed (the spec applies the BERT rule, E = H and no sharing), a vocabulary
    of `vocab` pieces, the scratch learning rate unless `options` give one, and snapshots
    spread over the run. start_run validates it."""
    base = ModelSpec.from_name(preset)
    bert = base.family == "bert"
    spec = base.replace(hidden_size=hidden, num_layers=layers, num_heads=heads, embedding_size=None if bert else embedding,
                        sharing=None if bert else sharing, num_groups=None, vocab_size=vocab, objective=objective)
    config = TrainConfig(spec=spec.to_dict(), objective=objective, corpus=corpus, vocab_size=vocab, max_steps=steps,
                         max_minutes=minutes or None, **{"lr": SCRATCH_LR, **snapshots(steps), **options})
    start = ["--preset", preset, *spec_flags(spec, "objective", "hidden_size", "num_layers", "num_heads", "vocab_size")]
    if not bert:
        start += spec_flags(spec, "embedding_size", "sharing")
    return dataclasses.replace(config, command=train_command(start, config))


def uptrain_config(init_from: str, objective: Objective, *, corpus: str, steps: int, minutes: float | None = None,
                   **options: Any) -> TrainConfig:
    """The Training page's run that starts from a checkpoint (uptraining): its architecture and
    tokenizer, no dropout (ALBERT's choice), the uptraining learning rate unless `options` give
    one, snapshots spread as in browser_config. start_run validates it."""
    from albert_lab.training.init import uptrain_spec

    folder, spec = uptrain_spec(Path(init_from), objective, dropout=0.0)
    config = TrainConfig(spec=spec.to_dict(), objective=objective, corpus=corpus, init_from=str(folder), max_steps=steps,
                         max_minutes=minutes or None, **{"lr": UPTRAIN_LR, **snapshots(steps), **options})
    start = ["--init-from", folder, *spec_flags(spec, "objective", "dropout")]
    return dataclasses.replace(config, command=train_command(start, config))


def spec_flags(spec: ModelSpec, *names: str) -> list[Any]:
    """`--hidden 256 --layers 4 ...`: the spec's flags and values for the fields `names` (a float as
    short as it reads: `--dropout 0`)."""
    flag = {row.name: row.flag for row in SPEC_OPTIONS}
    value = lambda v: f"{v:g}" if isinstance(v, float) else v
    return [item for name in names for item in (flag[name], value(getattr(spec, name)))]


def train_command(start: list[Any], config: TrainConfig) -> str:
    """The `albert-lab train` command that makes the same run (a card's provenance said
    'browser: lab-tiny, sop', which nobody could run again; a test parses it back): `start`
    (the preset and spec flags, or the checkpoint it starts from), then each option the
    table records, where it differs from the default or is recorded always."""
    args = list(start)
    for row in OPTIONS_OF_CONFIG:
        value = getattr(config, row.name)
        if row.flag is None or row.record == "never" or value in (None, ""):
            continue
        if row.switch:  # the flag alone
            args += [row.flag] if value != row.default else []
        elif value != row.default or row.record == "always":
            args += [row.flag, value]
    return "albert-lab train " + shlex.join(str(a) for a in args)
