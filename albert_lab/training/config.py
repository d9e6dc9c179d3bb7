"""TrainConfig: everything a pretraining run needs, validated before any process starts."""

from __future__ import annotations

import dataclasses
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from albert_lab.data.corpora import BUILTIN, builtin_limit
from albert_lab.errors import RunError
from albert_lab.limits import MAX_SEED, check_range, max_threads
from albert_lab.params import fit_problem
from albert_lab.spec import ModelSpec, Objective, check_types, field_names, unknown_field

Precision = Literal["auto", "fp32", "bf16"]
PoolerInit = Literal["keep", "standardize"]
MAX_LR = 1.0  # above it these models diverge at once (LAMB and AdamW alike); 1e30 or inf is a typo


@dataclass
class TrainConfig:
    spec: dict[str, Any] = field(default_factory=lambda: ModelSpec.from_name("lab-tiny").to_dict())
    objective: Objective = "sop"  # inter-sentence loss (overrides spec.objective)
    corpus: str = "long-mix"  # a named corpus (data/corpora.py), a .txt/.jsonl path, or hf:<dataset>
    eval_corpus: str | None = None  # evaluate on this corpus's held-out documents (default: the training corpus's)
    tokenizer: str | None = None  # folder with a trained tokenizer to reuse; None trains one
    init_from: str | None = None  # a checkpoint folder to start from (uptraining): its weights, spec and tokenizer
    distil_from: str | None = None  # a checkpoint of the same width and vocabulary to distil from (hidden states, MLM)
    distil_weight: float = 1.0  # the distillation term's weight in the loss
    distil_pair: bool = False  # also match the teacher's pair distribution (its head trained for the same task)
    pair_weight: float = 1.0  # the pair (SOP/NSP) loss's weight: the paper's loss is MLM + pair, 1
    pooler_init: PoolerInit = "keep"  # uptraining: keep the pooler, or standardise [CLS] (training/init.py)
    full_eval: bool = False  # the final evaluation on every held-out pair, not a sample sized to the run
    heads_only: bool = False  # train the MLM and pair heads (and pooler) on a frozen encoder: a probe of what it knows
    vocab_size: int = 8000  # SentencePiece pieces when training a tokenizer
    lowercase: bool = True
    max_seq_len: int = 128
    batch_size: int = 64
    lr: float = 1e-3
    optimizer: Literal["lamb", "adamw"] = "lamb"
    weight_decay: float = 0.01
    warmup_steps: int = 100
    max_steps: int | None = 1000  # budget in optimizer steps ...
    max_minutes: float | None = None  # ... or in minutes (the first reached ends the run)
    seed: int = 0
    clip_norm: float | None = 1.0
    precision: Precision = "auto"  # bf16 autocast where the hardware has it
    threads: int | None = None  # torch intra-op threads; None = all cores
    short_seq_prob: float = 0.1  # share of shorter sequences (paper: 10%)
    chunk_start: Literal["document", "random"] = "document"  # random: pairs from inside documents too (not in the paper)
    max_predictions: int = 20  # MLM predictions per sequence at most
    log_every: int = 10
    eval_every: int = 200  # held-out MLM/NSP/SOP accuracy (on `eval_limit` pairs per task)
    eval_limit: int = 256
    checkpoint_every: int = 200
    gradflow_every: int = 100
    name: str = ""
    command: str = ""  # how the run was started, for the checkpoint's provenance

    def model_spec(self) -> ModelSpec:
        return ModelSpec.from_dict({**self.spec, "objective": self.objective})

    def sized_spec(self) -> ModelSpec:
        """model_spec with the vocabulary the run will have: a new tokenizer's size (vocab_size),
        or the given tokenizer's, which the spec already holds. What its memory is counted on."""
        spec = self.model_spec()
        return spec if self.tokenizer is not None else spec.replace(vocab_size=self.vocab_size)

    def validate(self) -> TrainConfig:
        """Raise RunError/SpecError naming the field; returns self for chaining."""
        spec = self.model_spec()
        for corpus in (self.corpus, self.eval_corpus):
            if isinstance(corpus, str) and corpus.strip().startswith(f"{BUILTIN}["):
                builtin_limit(corpus.strip())  # wiki-vital[:abc], [:], [:-5] refused in words
        check_range(self.seed, 0, MAX_SEED, "seed")
        check_range(self.threads, 1, max_threads(), "threads")
        for name in ("lr", "weight_decay", "max_minutes", "clip_norm", "short_seq_prob", "distil_weight", "pair_weight"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise RunError(f"{name}: must be a finite number, got {value}")
        checks = [
            ("lr", 0 < self.lr <= MAX_LR, f"learning rate must be positive and at most {MAX_LR}, got {self.lr:g}"),
            ("batch_size", self.batch_size >= 1, f"must be at least 1, got {self.batch_size}"),
            ("max_seq_len", 16 <= self.max_seq_len <= spec.max_positions,
             f"must be between 16 and the model's max_positions ({spec.max_positions}), got {self.max_seq_len}"),
            ("vocab_size", self.tokenizer is not None or self.vocab_size >= 100,
             f"must be at least 100 pieces, got {self.vocab_size}"),
            ("max_steps", self.max_steps is None or self.max_steps >= 1, f"must be at least 1, got {self.max_steps}"),
            ("max_minutes", self.max_minutes is None or self.max_minutes > 0, f"must be positive, got {self.max_minutes}"),
            ("budget", self.max_steps is not None or self.max_minutes is not None, "give max_steps or max_minutes"),
            ("warmup_steps", self.warmup_steps >= 0, f"must be >= 0, got {self.warmup_steps}"),
            ("weight_decay", self.weight_decay >= 0, f"must be >= 0, got {self.weight_decay}"),
            ("short_seq_prob", 0 <= self.short_seq_prob <= 1, f"must be a probability, got {self.short_seq_prob}"),
            ("max_predictions", self.max_predictions >= 1, f"must be at least 1, got {self.max_predictions}"),
            ("optimizer", self.optimizer in ("lamb", "adamw"), f"{self.optimizer!r}; allowed: 'lamb', 'adamw'"),
            ("precision", self.precision in ("auto", "fp32", "bf16"), f"{self.precision!r}; allowed: auto, fp32, bf16"),
            ("chunk_start", self.chunk_start in ("document", "random"), f"{self.chunk_start!r}; allowed: document, random"),
            ("pooler_init", self.pooler_init in get_args(PoolerInit), f"{self.pooler_init!r}; allowed: {', '.join(get_args(PoolerInit))}"),
            ("pooler_init", self.pooler_init == "keep" or (self.init_from is not None and self.objective != "none"),
             "standardize sets up the pooler of a run that starts from a checkpoint and trains a pair head"),
            ("distil_weight", self.distil_weight > 0, f"must be positive, got {self.distil_weight:g}"),
            ("pair_weight", self.pair_weight > 0, f"must be positive, got {self.pair_weight:g}"),
            ("distil_from", not (self.distil_from and self.heads_only), "a probe trains only the heads: it distils nothing"),
            ("distil_pair", not self.distil_pair or (self.distil_from is not None and self.objective != "none"),
             "matches a teacher's pair head: needs distil_from and a pair objective"),
            ("heads_only", not self.heads_only or self.init_from is not None,
             "a frozen random encoder says nothing: heads-only runs need init_from"),
        ]
        for name in ("log_every", "eval_every", "checkpoint_every", "gradflow_every", "eval_limit"):
            checks.append((name, getattr(self, name) >= 1, f"must be at least 1, got {getattr(self, name)}"))
        for name, ok, message in checks:
            if not ok:
                raise RunError(f"{name}: {message}")
        if problem := fit_problem(self.sized_spec(), self.batch_size, self.max_seq_len):
            raise RunError(f"spec: {problem}")
        return self

    def divergence_causes(self) -> str:
        """The settings of this run that can make its loss NaN or infinite, most likely first,
        for the message of a run that diverged."""
        spec = self.model_spec()
        causes = []
        if spec.dropout >= 0.5:
            causes.append(f"dropout {spec.dropout:g} (it zeroes {spec.dropout:.0%} of activations and scales the rest "
                          f"by {1 / (1 - spec.dropout):.3g}; ALBERT uses 0, BERT 0.1)")
        causes.append(f"the learning rate {self.lr:g} (try {self.lr / 10:g})")
        if self.warmup_steps == 0:
            causes.append("no warm-up (try --warmup 100)")
        if self.clip_norm is None:
            causes.append("no gradient clipping")
        if self.precision == "bf16":
            causes.append("bf16 precision (try fp32)")
        return "; ".join(causes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        check_types(cls, data, lambda name, message: RunError(f"{name}: {message}"), "config")
        if (unknown := unknown_field(cls, data)) is not None:  # '' is a key too
            raise RunError(f"{unknown}: unknown training option; allowed: {field_names(cls)}")
        config = cls(**data)
        config.model_spec()  # raises SpecError naming the bad field
        return config


def browser_config(preset: str, objective: Objective, *, hidden: int, layers: int, embedding: int, heads: int,
                   sharing: str, corpus: str, steps: int, minutes: float | None = None, vocab: int = 8000, **options: Any) -> TrainConfig:
    """The TrainConfig for the Training page's form: the preset with the fields the form
    shows changed (the spec applies the BERT rule, E = H and no sharing), a vocabulary
    of `vocab` pieces, and evaluation, checkpoint and gradient-flow snapshots spread over
    the run (five, five and ten of them). Validated."""
    base = ModelSpec.from_name(preset)
    bert = base.family == "bert"
    spec = base.replace(hidden_size=hidden, num_layers=layers, num_heads=heads, embedding_size=None if bert else embedding,
                        sharing=None if bert else sharing, num_groups=None, vocab_size=vocab, objective=objective)
    every = max(10, steps // 5)
    config = TrainConfig(spec=spec.to_dict(), objective=objective, corpus=corpus, vocab_size=vocab, max_steps=steps,
                         max_minutes=minutes or None, eval_every=every, checkpoint_every=every,
                         gradflow_every=max(10, steps // 10), **options)
    return dataclasses.replace(config, command=train_command(preset, config)).validate()


# TrainConfig field -> `albert-lab train` flag, for the command a browser run records
TRAIN_FLAGS = {"corpus": "--corpus", "vocab_size": "--vocab-size", "max_seq_len": "--seq-len", "batch_size": "--batch-size",
               "lr": "--lr", "optimizer": "--optimizer", "warmup_steps": "--warmup", "max_steps": "--steps",
               "max_minutes": "--minutes", "seed": "--seed", "chunk_start": "--chunk-start", "eval_every": "--eval-every",
               "checkpoint_every": "--checkpoint-every", "gradflow_every": "--gradflow-every", "name": "--name",
               "distil_from": "--distil-from", "distil_weight": "--distil-weight", "pair_weight": "--pair-weight",
               "pooler_init": "--pooler-init", "distil_pair": "--distil-pair",
               "eval_corpus": "--eval-corpus"}


def uptrain_config(init_from: str, objective: Objective, *, corpus: str, steps: int, minutes: float | None = None,
                   **options: Any) -> TrainConfig:
    """The Training page's run that starts from a checkpoint (uptraining): its architecture and
    tokenizer, no dropout (ALBERT's choice), snapshots spread as in browser_config. Validated."""
    from albert_lab.training.init import uptrain_spec

    folder, spec = uptrain_spec(Path(init_from), objective, dropout=0.0)
    every = max(10, steps // 5)
    config = TrainConfig(spec=spec.to_dict(), objective=objective, corpus=corpus, init_from=str(folder), max_steps=steps,
                         max_minutes=minutes or None, eval_every=every, checkpoint_every=every,
                         gradflow_every=max(10, steps // 10), **options)
    args: list[Any] = ["--init-from", folder, "--objective", objective, "--dropout", 0]
    return dataclasses.replace(config, command="albert-lab train " + shlex.join(str(a) for a in args + _flags(config))).validate()


def _flags(config: TrainConfig) -> list[Any]:
    """The `albert-lab train` flags of the options that differ from the defaults (corpus and steps always)."""
    args: list[Any] = []
    defaults = TrainConfig()
    for name, flag in TRAIN_FLAGS.items():
        value = getattr(config, name)
        if isinstance(value, bool):  # a switch: the flag alone
            args += [flag] if value and not getattr(defaults, name) else []
        elif value not in (None, "") and (value != getattr(defaults, name) or name in ("corpus", "max_steps")):
            args += [flag, value]
    return args


def train_command(preset: str, config: TrainConfig) -> str:
    """The `albert-lab train` command that makes the same run (a card's provenance said
    'browser: lab-tiny, sop', which nobody could run again); a test parses it back."""
    spec = config.model_spec()
    args = ["--preset", preset, "--objective", config.objective, "--hidden", spec.hidden_size, "--layers", spec.num_layers,
            "--heads", spec.num_heads, "--vocab", spec.vocab_size]
    if spec.family != "bert":
        args += ["--embedding", spec.embedding_size, "--sharing", spec.sharing]
    return "albert-lab train " + shlex.join(str(a) for a in args + _flags(config))
